"""Where `x2 objects add` writes a user's mesh object, and whether it has anything to write.

A mesh object is two files in ./specs/objects/ beside any hand-written one, laid out as x2's own
(x2/assets/objects/block.yaml + block.xml): NAME.xml (the self-contained MJCF, x2.meshes.fragment) and NAME.yaml
(the asset), and NAME.png when the mesh has a texture (x2.meshes.skin; the MJCF names it, and x2 carries its
bytes in every world that holds the object). The MJCF and YAML start with a comment holding the cache key
(x2.meshes.build.cache_key): the same file with the same options is not made again, a changed one replaces them.
A name of x2's own objects, or of a user object that `x2 objects add` did not make, is refused: nothing a person
wrote is overwritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import SpecError
from x2.envspec import catalog
from x2.envspec.schema import DISPLAY_ALLOWED, DISPLAY_PATTERN, NAME_PATTERN
from x2.files.atomic import write_bytes, write_text
from x2.meshes.fragment import KEY_PREFIX, texture_file


@dataclass(frozen=True)
class ObjectFiles:
    yaml: Path
    xml: Path
    png: Path  # the texture, when the object has one


def check_display_name(display: str | None) -> None:
    """A display name the object's YAML will load with (schema.AssetFile.display), refused before any work."""
    if display is not None and not re.match(DISPLAY_PATTERN, display):
        raise SpecError(None, None, "display", repr(display), DISPLAY_ALLOWED)


def object_files(name: str) -> ObjectFiles:
    """The files of user object `name` (checked: a new name, or one `x2 objects add` made)."""
    if not re.match(NAME_PATTERN, name) or name.startswith(".") or name.endswith((".yaml", ".yml")):
        raise SpecError(None, None, "name", repr(name), "letters, digits, '_', '-' and '.' (not first), as other "
                        "object names")
    if (catalog.BUILTIN_DIRS["objects"] / f"{name}.yaml").is_file():
        raise SpecError(None, None, "name", f"{name!r} (one of x2's own objects)", "a name x2 does not ship")
    folder = catalog.user_dir("objects")
    files = ObjectFiles(yaml=folder / f"{name}.yaml", xml=folder / f"{name}.xml", png=folder / texture_file(name))
    for path in (files.yaml, files.xml):
        if path.exists() and written_key(path) is None:
            raise SpecError(str(path), None, "name", f"{name!r} (a file `x2 objects add` did not write)",
                            "a new name, or remove that file first")
    if files.png.exists() and written_key(files.xml) is None:
        raise SpecError(str(files.png), None, "name", f"{name!r} (a file `x2 objects add` did not write)",
                        "a new name, or remove that file first")
    return files


def written_key(path: Path) -> str | None:
    """The cache key in the first lines of a file `x2 objects add` wrote; None for any other file."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = [f.readline() for _ in range(6)]
    except OSError:
        return None
    for line in head:
        if KEY_PREFIX in line:
            return line.split(KEY_PREFIX, 1)[1].strip()
    return None


def is_current(files: ObjectFiles, key: str) -> bool:
    """True when its files are there and were made from the same input and options."""
    if written_key(files.xml) != key or written_key(files.yaml) != key:
        return False
    return files.png.is_file() or f'file="{files.png.name}"' not in files.xml.read_text(encoding="utf-8")


def write_object(files: ObjectFiles, xml: str, yaml: str, texture: bytes | None = None) -> None:
    """Its files, each replaced whole: the texture first (a stale one removed), the YAML last, so the object is
    listed only once its MJCF and image are in place."""
    files.xml.parent.mkdir(parents=True, exist_ok=True)
    if texture is not None:
        write_bytes(files.png, texture)
    write_text(files.xml, xml)
    write_text(files.yaml, yaml)
    if texture is None:
        files.png.unlink(missing_ok=True)
