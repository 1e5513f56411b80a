"""What the tests of the HTML pages share: a page parsed for its title, images and text; and
the page opened in headless Chromium, where there is one, with its plots' red counted."""

import shutil
import subprocess
from html.parser import HTMLParser

import pytest


class Page(HTMLParser):
    """The parts of a page the tests read: its title, images (their sources) and text."""

    def __init__(self, text):
        super().__init__()
        self.images, self.text, self._in_title, self.title = [], [], False, ""
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self._in_title = tag == "title"
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)


def red_pixels(png):
    """How many pixels of a PNG are the plots' red."""
    import numpy
    from PIL import Image

    with Image.open(png) as image:
        pixels = numpy.asarray(image.convert("RGB"))
    return int((pixels == (193, 18, 31)).all(-1).sum())


def screenshot(page, png):
    """Open ``page`` in headless Chromium and save what it shows (skip where there is none)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium here to open the page (apt-get install chromium)")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
                    "--window-size=1300,1300", page.as_uri()], capture_output=True, timeout=60, check=True)
