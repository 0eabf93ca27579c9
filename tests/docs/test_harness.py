"""The docs run can fail: the harness's own tests."""

from __future__ import annotations

from pathlib import Path

import doc_runner
import pytest

README_COMMAND = "pytps run --base-url http://127.0.0.1:8000 --api openai-chat"


def _block_with(path: Path, text: str):  # type: ignore[no-untyped-def]
    document = doc_runner.parse(path)
    for example in document:
        if text in str(example.parsed):
            return document, example
    raise AssertionError(f"no block of {path} holds {text!r}")


def _evaluate(path: Path, text: str, port: int, tmp_path: Path) -> None:
    document, example = _block_with(path, text)
    cwd = tmp_path / "reader"
    cwd.mkdir()
    doc_runner.setup_namespace(document.namespace, cwd, port, doc_runner.environment(port, tmp_path))
    example.evaluate()


def test_a_readme_command_with_an_unknown_flag_fails(doc_server: int, tmp_path: Path) -> None:
    readme = (doc_runner.ROOT / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in readme
    copy = tmp_path / "README.md"
    copy.write_text(readme.replace(README_COMMAND, README_COMMAND + " --no-such-flag", 1), encoding="utf-8")
    with pytest.raises(AssertionError, match="unrecognized arguments: --no-such-flag"):
        _evaluate(copy, README_COMMAND, doc_server, tmp_path)


def test_a_python_example_that_raises_fails(doc_server: int, tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nimport pytps\npytps.Histogram(lowest=0)\n```\n", encoding="utf-8")
    with pytest.raises(Exception, match="lowest"):
        _evaluate(doc, "Histogram", doc_server, tmp_path)


def test_a_missing_output_column_fails() -> None:
    with pytest.raises(AssertionError, match="p50 TTFT"):
        doc_runner.check_output("concurrency | p50 TTFT [ms]\n--+--\n", "concurrency | mean [ms]\n")


def test_pip_install_forms_that_only_work_from_an_index_fail() -> None:
    doc_runner.check_pip_install('pip install ".[html]"')
    with pytest.raises(AssertionError, match="no index has"):
        doc_runner.check_pip_install('pip install "pytps[html]"')
    with pytest.raises(AssertionError, match="no extra 'nope'"):
        doc_runner.check_pip_install('pip install ".[nope]"')


def test_every_fenced_block_says_its_language() -> None:
    """An unlabelled block would be collected by nothing: every block is sh, python, text, or a file
    no one runs as it stands (toml, a crontab line, an ini file such as a systemd unit)."""
    for path in doc_runner.DOCS:
        inside = False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith("```"):
                if not inside:
                    assert line.strip()[3:] in ("sh", "python", "text", "toml", "crontab", "ini"), (
                        f"{path.name}:{n}: {line.strip()!r}"
                    )
                inside = not inside


def test_the_skip_list_of_docs_tests_md_is_current() -> None:
    """docs/docs-tests.md's list of skipped blocks is the docs' own skip marks
    (`python tests/docs/skip_list.py --write` regenerates it)."""
    import skip_list

    text = skip_list.LIST_DOC.read_text(encoding="utf-8")
    assert skip_list.current(text) == skip_list.render(skip_list.skips())
    # A planted mark the list does not have is caught.
    planted = [*skip_list.skips(), ("docs/new.md", "a planted reason")]
    assert skip_list.current(text) != skip_list.render(planted)


def test_an_output_whose_figures_vary_is_checked_word_for_word() -> None:
    shown = "REGRESSION ttft_p50 http://127.0.0.1:8000 m [0b9d3c1e77aa] run 31: 60.2 ms against 50.1 ms (+20.1% worse)"
    printed = (
        "REGRESSION ttft_p50 http://127.0.0.1:41234 m [7f3e21aa90bc] run 6: 61.0 ms against 50.9 ms (+19.8% worse)\n"
    )
    doc_runner.check_output(shown, printed, figures_vary=True)
    with pytest.raises(AssertionError):
        doc_runner.check_output(shown, printed)  # figures compared as written
    with pytest.raises(AssertionError):  # a word changed is caught
        doc_runner.check_output(shown, printed.replace("worse", "better"), figures_vary=True)
