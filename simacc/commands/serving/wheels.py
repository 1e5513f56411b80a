"""An engine's released wheel as files on disk, for ``simacc engines --version NAME==VERSION``:
``pip download --no-deps`` into a folder kept between runs, and unpacked beside the wheel
whole (its package and its dist-info, which vLLM reads to know its own version). Nothing is
installed, and no requirement is fetched: a wheel that pins a multi-GB CUDA build of torch
(vLLM 0.34.0 pins ``torch==2.14.0``) is read and run under the torch already here.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


def parse(text):
    """``(name, version)`` of ``NAME==VERSION``; ValueError for anything else."""
    match = SPEC.match(text)
    if not match:
        raise ValueError(f"{text!r} is not NAME==VERSION (an exact release, as pip download takes it)")
    return match.group(1).lower(), match.group(2)


def _wheel(folder, name, version):
    stem = re.sub(r"[-_.]+", "_", name)
    found = sorted(Path(folder).glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def download(name, version, folder):
    """``pip download --no-deps`` of ``name==version`` into ``folder``: None, or why it failed (one line)."""
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                           "-d", str(folder), f"{name}=={version}"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in said if line.startswith("ERROR:")]
    return (errors or said or [f"pip exited {done.returncode}"])[-1]


def unpacked(name, version, folder):
    """``(path, None)``: the folder holding the wheel of ``name==version`` unpacked (fetched into
    ``folder`` with :func:`download` unless a wheel of it is there already); ``(None, why)``
    when it cannot be had. A folder is unpacked under another name and renamed when whole."""
    folder = Path(folder)
    target = folder / f"{name}-{version}"
    if target.is_dir():
        return target, None
    folder.mkdir(parents=True, exist_ok=True)
    wheel = _wheel(folder, name, version)
    if wheel is None:
        why = download(name, version, folder)
        wheel = _wheel(folder, name, version)
        if wheel is None:
            return None, f"no wheel of {name}=={version}: {why or 'pip downloaded none'}"
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=folder))
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(partial)
    except (zipfile.BadZipFile, OSError) as e:
        shutil.rmtree(partial, ignore_errors=True)
        return None, f"{wheel.name} does not unpack: {e}"
    os.replace(partial, target)
    return target, None
