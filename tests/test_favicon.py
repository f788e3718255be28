"""The book has a favicon of its own (else every page logs a 404 for /favicon.ico)."""

import struct
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_book_config_names_a_32x32_png_favicon_that_exists():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    favicon = ROOT / config["html"]["favicon"]
    assert favicon.is_file() and favicon.suffix == ".png"
    data = favicon.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (32, 32)


def test_jupyter_book_passes_it_to_sphinx_as_html_favicon():
    from jupyter_book.config import get_final_config

    config, *_ = get_final_config(
        user_yaml=ROOT / "_config.yml",
        cli_config={"latex_individualpages": False},
        sourcedir=ROOT,
        raise_on_invalid=True,
    )
    assert config["html_favicon"] == "book/_static/favicon.png"
