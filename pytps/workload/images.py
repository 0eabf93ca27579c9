"""Images for chat prompts (`--images N --image-size WxH|LO-HI`): generated locally with Pillow,
seeded, one set per request unless shared (`--shared-images`), PNG or JPEG; or read from files a
dataset record names. Each carries its bytes and pixel count, which the run records.

A generated image is a grid of random colour blocks (8 x 8 blocks, scaled up without smoothing):
its content is a function of (seed, request, position) only, it is unique per request, so no
server cache answers for it, and it compresses as a real picture roughly does rather than as
noise (a noise PNG would be ~3 bytes per pixel on the wire).
"""

from __future__ import annotations

import base64
import functools
import io
import random
from dataclasses import dataclass
from pathlib import Path

from pytps.errors import ConfigError

__all__ = ["Image", "ImageSpec", "load_image", "parse_image_size"]

IMAGE_FORMATS = ("png", "jpeg")
MAX_SIDE = 8192
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}


@dataclass(frozen=True)
class Image:
    """One image as it is sent: its encoded bytes, media type and size."""

    data: bytes
    mime: str
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_uri(self) -> str:
        return f"data:{self.mime};base64,{self.base64}"


def parse_image_size(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """`WxH` (every image that size) or `LO-HI` (each side drawn in LO..HI): ((w_lo, w_hi), (h_lo, h_hi))."""
    t = str(text).strip().lower()
    try:
        if "x" in t:
            w, h = (int(v) for v in t.split("x"))
            sides = ((w, w), (h, h))
        else:
            lo, hi = (int(v) for v in t.split("-"))
            sides = ((lo, hi), (lo, hi))
    except ValueError:
        raise ConfigError(f"--image-size {text!r}: write WxH (512x512) or LO-HI per side (256-1024)") from None
    for lo, hi in sides:
        if not 1 <= lo <= hi <= MAX_SIDE:
            raise ConfigError(f"--image-size {text!r}: sides must be 1..{MAX_SIDE} pixels, the low end first")
    return sides


def _pillow() -> object:
    try:
        from PIL import Image as PILImage
    except ImportError:
        raise ConfigError("--images needs Pillow: pip install pillow (or the 'images' extra)") from None
    return PILImage


@dataclass(frozen=True)
class ImageSpec:
    """How many images each chat prompt carries, their size and format, and whether every
    request shares one set."""

    count: int = 0
    size: str = "512x512"
    fmt: str = "png"
    shared: bool = False
    seed: int = 0

    def validate(self) -> ImageSpec:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or not 0 <= self.count <= 64:
            raise ConfigError(f"images (--images) must be an integer from 0 to 64, got {self.count!r}")
        if self.fmt not in IMAGE_FORMATS:
            raise ConfigError(f"image_format (--image-format) must be one of {', '.join(IMAGE_FORMATS)}")
        parse_image_size(self.size)
        if self.count:
            _pillow()
        return self

    def images(self, i: int) -> list[Image]:
        """Request i's images (the same for every i when shared, made once)."""
        return list(_images(self.count, self.size, self.fmt, self.seed, "shared" if self.shared else str(i)))


def _make(count: int, size: str, fmt: str, seed: int, owner: str) -> tuple[Image, ...]:
    (w_lo, w_hi), (h_lo, h_hi) = parse_image_size(size)
    out = []
    for k in range(count):
        rng = random.Random(f"pytps:{seed}:{owner}:image:{k}")
        out.append(_generate(rng, rng.randint(w_lo, w_hi), rng.randint(h_lo, h_hi), fmt))
    return tuple(out)


_shared = functools.lru_cache(maxsize=8)(_make)


def _images(count: int, size: str, fmt: str, seed: int, owner: str) -> tuple[Image, ...]:
    return _shared(count, size, fmt, seed, owner) if owner == "shared" else _make(count, size, fmt, seed, owner)


def _generate(rng: random.Random, width: int, height: int, fmt: str) -> Image:
    pil: object = _pillow()
    blocks = bytes(rng.getrandbits(8) for _ in range(8 * 8 * 3))
    small = pil.frombytes("RGB", (8, 8), blocks)  # type: ignore[attr-defined]
    if fmt == "png":  # a palette PNG: a quarter of the bytes to compress, ~4x faster to make
        small = small.convert("P", palette=pil.Palette.ADAPTIVE, colors=64)  # type: ignore[attr-defined]
    img = small.resize((width, height), resample=pil.Resampling.NEAREST)  # type: ignore[attr-defined]
    buf = io.BytesIO()
    # compress_level 1: the client makes an image per request, on the send path; size matters less.
    img.save(buf, format=fmt.upper(), **({"quality": 90} if fmt == "jpeg" else {"compress_level": 1}))
    return Image(buf.getvalue(), _MIME[fmt], width, height)


@functools.lru_cache(maxsize=256)
def load_image(path: str | Path) -> Image:
    """An image file a dataset record names, sent as it is (its size read by Pillow); read once
    per run (a record is replayed many times)."""
    pil: object = _pillow()
    p = Path(path)
    try:
        data = p.read_bytes()
        with pil.open(io.BytesIO(data)) as img:  # type: ignore[attr-defined]
            width, height, kind = img.width, img.height, (img.format or "").lower()
    except OSError as exc:
        raise ConfigError(f"image {p}: cannot be read as an image ({exc})") from None
    mime = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}.get(kind)
    if mime is None:
        raise ConfigError(f"image {p}: {kind or 'unknown'} format; send PNG, JPEG, GIF or WebP")
    return Image(data, mime, width, height)
