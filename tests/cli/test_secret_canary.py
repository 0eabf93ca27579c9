"""One redaction rule for every secret (pytps.measure.redact): a canary planted in each place a
secret can come from (the environment's key, --header values, URL userinfo, a query key) appears
in no file any command writes, nor in anything it prints, even from a server that echoes the
request's headers back in its error bodies."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from fault_servers import FaultServer, read_body
from hostile import echo_headers

from pytps.measure.redact import Redactor, secrets_of

CANARIES = {
    "env": "sk-CANARYenv0123456789",
    "authorization header": "CANARYbearer0123456789",
    "x-api-key header": "CANARYxapikey0123456789",
    "cookie header": "CANARYcookie0123456789",
    "userinfo": "CANARYpass0123456789",
    "query": "CANARYquery0123456789",
}


def half_echo():
    """Odd requests: a 400 echoing the request head (headers and all); even: a 4-token stream."""
    count = itertools.count()

    def handler(srv, conn, reader, req):
        if next(count) % 2:
            return echo_headers(srv, conn, reader, req)
        if not read_body(reader, req):
            return False
        from fault_servers import answer_stream

        answer_stream(conn)
        return True

    return handler


def test_the_rule():
    secrets = secrets_of("sk-key-123", {"Authorization": "Bearer tok-abc-123", "X-Team": "bench"},
                         "http://me:pw-9876@host:1/v1?key=q-12345&model=x")
    r = Redactor(secrets)
    assert r("sk-key-123 tok-abc-123 Bearer tok-abc-123 me:pw-9876 pw-9876 q-12345 bench x") == (
        "*** *** *** *** *** *** bench x"
    )


def test_a_canary_in_every_secret_appears_in_no_output(tmp_path):
    env = {**os.environ, "OPENAI_API_KEY": CANARIES["env"]}
    printed: list[str] = []

    def pytps(*args: str, ok: tuple[int, ...] = (0,), without_key: bool = False) -> None:
        run_env = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"} if without_key else env
        r = subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, env=run_env,
                           cwd=tmp_path, timeout=300)
        assert r.returncode in ok, (args, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr, r.stderr
        printed.append(r.stdout + r.stderr)

    with FaultServer(half_echo()) as srv:
        port = srv.port
        # The userinfo is sent as Basic auth only without an API key (issue 40): the runs with the
        # key and auth headers name the URL without it; one run below sends the userinfo alone.
        userinfo_url = f"http://user:{CANARIES['userinfo']}@127.0.0.1:{port}/v1?key={CANARIES['query']}"
        url = f"http://127.0.0.1:{port}/v1?key={CANARIES['query']}"
        headers = ["--header", f"Authorization: Bearer {CANARIES['authorization header']}",
                   "--header", f"X-Api-Key: {CANARIES['x-api-key header']}",
                   "--header", f"Cookie: session={CANARIES['cookie header']}"]
        common = ["--base-url", url, "--model", "m", "--requests", "8", "--output-tokens", "4", "--input-tokens", "8",
                  *headers]
        pytps("run", *common, "--out", "a", "--html")
        pytps("run", "--base-url", userinfo_url, "--model", "m", "--requests", "4", "--output-tokens", "4",
              "--header", f"Cookie: session={CANARIES['cookie header']}", "--out", "u", "--html", without_key=True)
        pytps("run", "--base-url", userinfo_url, "--model", "m", "--requests", "1", ok=(2,))  # userinfo and a key
        pytps("run", *common, "--out", "b", "--json")
        pytps("report", "a", "--json")
        pytps("report", "a", "--markdown")
        pytps("report", "a", "--trace", "a.trace.json")
        pytps("report", "a", "--html", "a.html")
        pytps("compare", "a", "b", "--json")
        pytps("compare", "a", "b", "--html", "cmp.html")
        pytps("sweep", *common, "--concurrency", "1,2", "--out", "sw", "--html")
        (tmp_path / "m.toml").write_text(
            f'[[endpoint]]\nname = "e"\nurl = "{url}"\nmodel = "m"\n'
            f'headers = {{ "X-Api-Key" = "{CANARIES["x-api-key header"]}" }}\n'
            '[[workload]]\nname = "w"\nrequests = 4\noutput_tokens = 4\ninput_tokens = 8\n'
        )
        pytps("run", "-c", "m.toml", "--out", "mx")
        pytps("run", "--base-url", f"http://user:{CANARIES['userinfo']}@/nohost", "--requests", "1", ok=(2,))
    # Every file every command wrote, and everything printed.
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "m.toml"]
    assert len(files) > 20
    sent = [r.head.decode("latin-1") for r in srv.requests]
    assert any(CANARIES["x-api-key header"] in h for h in sent)  # the secrets did reach the server
    assert any("authorization: basic" in h.lower() for h in sent)  # the userinfo too, as Basic auth
    for name, canary in CANARIES.items():
        for p in files:
            data = p.read_bytes()
            if p.suffix == ".npz":
                import zipfile

                with zipfile.ZipFile(p) as z:
                    data = b"".join(z.read(n) for n in z.namelist())
            assert canary.encode() not in data, f"the {name} canary is in {p.relative_to(tmp_path)}"
        for text in printed:
            assert canary not in text, f"the {name} canary was printed:\n{text}"
    journal = (tmp_path / "a" / "requests.jsonl").read_text()
    assert "***" in journal  # the echoed headers were there, redacted
    assert json.loads((tmp_path / "a" / "results.json").read_text())["summary"]["requests_ok"] >= 1
    Path(tmp_path / "a.trace.json").stat()


def test_the_first_requests_errors_are_redacted_too(tmp_path):
    """A 404 on the first request ends the run with one line naming the URL: its userinfo masked."""
    from hostile import answer

    with FaultServer(answer(b'{"error": "no such route"}', "application/json", "404 Not Found")) as srv:
        url = f"http://user:{CANARIES['userinfo']}@127.0.0.1:{srv.port}"
        r = subprocess.run([sys.executable, "-m", "pytps", "run", "--base-url", url, "--model", "m", "--requests", "1",
                            "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "HTTP 404" in r.stderr, r.stderr
    assert CANARIES["userinfo"] not in r.stderr
    for p in tmp_path.rglob("*"):
        assert not p.is_file() or CANARIES["userinfo"].encode() not in p.read_bytes(), p
