"""Compiling a world read from a file: the MJCF text is checked before MuJoCo sees it.

An episode file carries the world it was stepped in as MJCF text (root attr ``model_xml``), and a lab
opens other labs' files. MuJoCo's parser opens whatever the text names: ``<include file>``, a mesh,
texture, height field, skin, sub-model or flexcomp ``file``, directories set by ``<compiler meshdir
texturedir assetdir>``; ``<extension>``/``<plugin>`` elements run plugin code; and a few numbers make the
compiler allocate as much memory as they say (a 60000x60000 builtin texture, ``<size memory="50G">``).
x2 never writes any of that: its worlds are primitive geoms, builtin textures and inline numbers
(x2.sim.mujoco.world), about 20 KB of text (a vendor arm's decimated visual meshes add a few hundred KB). So a
recorded world must be self-contained, and `check_world_xml` refuses anything else before the first byte reaches
MuJoCo:

- text over `MAX_WORLD_BYTES`, or nested deeper than `MAX_DEPTH` (MuJoCo's reader recurses);
- anything but one plain XML document with a ``<mujoco>`` root: a DOCTYPE (so no entity is ever
  declared or expanded, no external DTD fetched), malformed XML, a URDF;
- every element that reads a file or loads code (`FILE_ELEMENTS`, `CODE_ELEMENTS`) and every attribute
  that names a file or a directory (`is_file_attribute`): the complete list from the schema of the
  MuJoCo x2 is built with (mujoco/doc/XMLschema.rst in the installed package);
- the numbers that size an allocation above generous bounds (`COUNT_LIMITS`, `MEMORY_LIMIT`).

One file reference is allowed: ``<texture file="NAME">`` where NAME is one of the images the world carries
beside its text (x2.sim.mujoco.textures: digest-named PNGs of bounded size, an object made from a textured
mesh); MuJoCo is then given those bytes and reads no file.

The checks run on the text (one expat pass, no tree kept); `compile_world` and `world_spec` are the
only ways x2 compiles or edits a world read from a file, and turn what MuJoCo still refuses into the
same one-line DatasetError naming the file.
"""

from __future__ import annotations

import math
import re
import xml.parsers.expat
from collections.abc import Callable, Mapping
from typing import NoReturn

import mujoco

from x2.base.errors import DatasetError
from x2.sim.mujoco.textures import check_textures

# x2's worlds are ~20 KB (the green booth with two arms and its objects), ~530 KB with the Panda's decimated visual
# meshes inline (x2/sim/mujoco/visual_meshes.py)
MAX_WORLD_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64  # x2's are 13 deep (mujoco > worldbody > nested robot bodies)
ALLOWED = "a self-contained world (no file references)"

# Elements that make MuJoCo open a file: include splices one in, asset/model reads a sub-model.
FILE_ELEMENTS = frozenset({"include", "model"})
# Elements that load or run plugin code (and the plugin instances' configuration).
CODE_ELEMENTS = frozenset({"extension", "plugin", "instance"})
# Attributes naming a plugin to run, on any element.
CODE_ATTRIBUTES = frozenset({"plugin", "instance"})
_FILE_ATTRIBUTE = re.compile(r"^file|.dir$")  # file, fileright, ..., filename (URDF); meshdir, texturedir, assetdir

# Integer attributes that size an allocation, per element (defaults classes included), and their upper
# bound: far above anything x2 writes (textures 128 px, offscreen 1280x960, shadows 2048), far below
# what would exhaust a workstation's memory.
COUNT_LIMITS: dict[str, dict[str, int]] = {
    "texture": {"width": 4096, "height": 4096, "nchannel": 4},
    "hfield": {"nrow": 4096, "ncol": 4096},
    "global": {"offwidth": 8192, "offheight": 8192},
    "quality": {"shadowsize": 8192, "offsamples": 16, "numslices": 1024, "numstacks": 1024, "numquads": 1024},
    "size": {"njmax": 1_000_000, "nconmax": 1_000_000, "nstack": 10_000_000, "nuserdata": 10_000_000,
             "nkey": 10_000, "nuser_body": 1000, "nuser_jnt": 1000, "nuser_geom": 1000, "nuser_site": 1000,
             "nuser_cam": 1000, "nuser_tendon": 1000, "nuser_actuator": 1000, "nuser_sensor": 1000},
    "replicate": {"count": 10_000},
    "flexcomp": {"count": 100_000, "cellcount": 100_000},
    "composite": {"count": 100_000},
    "mesh": {"params": 1000},
}
ANY_ELEMENT_LIMITS = {"nsample": 10_000}  # history buffers of sensors and actuators
MULTIPLYING = frozenset({"replicate"})  # nested replicas multiply: their product is bounded too
MEMORY_LIMIT = 1 << 30  # <size memory="...">: bytes of mjData's arena (MuJoCo sizes it itself when unset)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_MEMORY = re.compile(r"^\s*(-?\d+)\s*([KMGTPE]?)\s*$", re.IGNORECASE)

def is_file_attribute(name: str) -> bool:
    """True for attributes through which MuJoCo reads a file or resolves a directory (light and camera
    ``dir`` is a direction, not a directory)."""
    return bool(_FILE_ATTRIBUTE.search(name)) and name != "dir"


class _Refused(Exception):
    def __init__(self, found: str, line: int):
        super().__init__(found)
        self.found, self.line = found, line


class _XmlChecker:
    """One expat pass over the text; raises _Refused at the first thing a recorded world may not hold."""

    def __init__(self, textures: Mapping[str, bytes]) -> None:
        self.textures = textures
        self.parser = xml.parsers.expat.ParserCreate()
        self.parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self.parser.StartDoctypeDeclHandler = lambda *a: self._refuse("a DOCTYPE declaration")
        self.parser.EntityDeclHandler = lambda *a: self._refuse("an entity declaration")
        self.parser.ExternalEntityRefHandler = lambda *a: self._refuse("an external entity reference")
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.stack: list[int] = []  # replica multiplier at each open element
        self.seen_root = False

    def _refuse(self, found: str) -> NoReturn:
        raise _Refused(found, self.parser.CurrentLineNumber)

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        if not self.stack:
            if self.seen_root or tag != "mujoco":
                self._refuse(f"root element <{tag}>" if not self.seen_root else "a second root element")
            self.seen_root = True
        if len(self.stack) >= MAX_DEPTH:
            self._refuse(f"elements nested more than {MAX_DEPTH} deep")
        if tag in FILE_ELEMENTS or tag in CODE_ELEMENTS:
            shown = "".join(f' {k}="{v[:60]}"' for k, v in list(attrs.items())[:2])
            self._refuse(f"<{tag}{shown}>")
        for name, value in attrs.items():
            if tag == "texture" and name == "file" and value in self.textures:
                continue  # an image the world carries (checked by check_textures): MuJoCo gets its bytes
            if is_file_attribute(name) or name in CODE_ATTRIBUTES:
                self._refuse(f'<{tag} {name}="{value[:60]}">')
        limits = {**ANY_ELEMENT_LIMITS, **COUNT_LIMITS.get(tag, {})}
        for name in limits.keys() & attrs.keys():
            self._bounded(tag, name, attrs[name], limits[name])
        if tag == "size" and "memory" in attrs:
            self._memory(attrs["memory"])
        multiplier = self.stack[-1] if self.stack else 1
        if tag in MULTIPLYING:
            multiplier *= max(1, int(self._numbers(tag, "count", attrs.get("count", "1"))[0]))
            if multiplier > COUNT_LIMITS[tag]["count"]:
                self._refuse(f"nested <{tag}> elements making {multiplier} copies (over {COUNT_LIMITS[tag]['count']})")
        self.stack.append(multiplier)

    def _end(self, tag: str) -> None:
        self.stack.pop()

    def _numbers(self, tag: str, name: str, value: str) -> list[float]:
        try:
            numbers = [float(v) for v in value.split()] or [0.0]
        except ValueError:
            numbers = [math.nan]
        if not all(math.isfinite(n) for n in numbers):
            self._refuse(f'<{tag} {name}="{value[:40]}"> (not a finite number)')
        return numbers

    def _bounded(self, tag: str, name: str, value: str, limit: int) -> None:
        numbers = self._numbers(tag, name, value)
        product = 1.0
        for n in numbers:
            product *= max(1.0, abs(n))
        worst = max(abs(n) for n in numbers)
        if worst > limit or (len(numbers) > 1 and name == "count" and product > limit):
            self._refuse(f'<{tag} {name}="{value[:40]}"> (over {limit})')

    def _memory(self, value: str) -> None:
        match = _MEMORY.match(value)
        if match is None:
            self._refuse(f'<size memory="{value[:40]}"> (not a byte count)')
            return
        size = int(match.group(1)) * _UNITS[match.group(2).upper()]
        if size > MEMORY_LIMIT:
            self._refuse(f'<size memory="{value[:40]}"> (over {MEMORY_LIMIT >> 20}M)')

    def run(self, text: bytes) -> None:
        self.parser.Parse(text, True)
        if not self.seen_root:
            self._refuse("no <mujoco> element")


def check_world_xml(text: str, where: str, textures: Mapping[str, bytes] | None = None) -> None:
    """Raise DatasetError("<where>: model_xml: found ... (line N); allowed: ...") unless `text` is a
    self-contained MJCF world (see the module docstring) with `textures` its images; `where` names the file it
    was read from."""
    check_textures(textures or {}, where)
    if not isinstance(text, str):
        raise DatasetError(f"{where}: model_xml: found {type(text).__name__}; allowed: MJCF text")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(f"{where}: model_xml: found text that is not valid UTF-8; allowed: {ALLOWED}") from None
    if len(data) > MAX_WORLD_BYTES:
        raise DatasetError(f"{where}: model_xml: found {len(data)} bytes; allowed: {ALLOWED} of at most "
                           f"{MAX_WORLD_BYTES} bytes")
    checker = _XmlChecker(textures or {})
    try:
        checker.run(data)
    except _Refused as refused:
        raise DatasetError(f"{where}: model_xml: found {_one_line(refused.found)} (line {refused.line}); "
                           f"allowed: {ALLOWED}") from None
    except xml.parsers.expat.ExpatError as exc:
        raise DatasetError(f"{where}: model_xml: found malformed XML ({xml.parsers.expat.ErrorString(exc.code)}) "
                           f"(line {exc.lineno}); allowed: {ALLOWED}") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _mujoco[T](where: str, what: str, build: Callable[[], T]) -> T:
    try:
        return build()
    except (ValueError, RuntimeError, MemoryError) as exc:  # RuntimeError: "Caught an unknown exception!"
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
        reason = "; ".join(lines[:2])[:300]
        raise DatasetError(f"{where}: model_xml: found a world MuJoCo cannot {what} ({reason}); "
                           f"allowed: {ALLOWED} that compiles") from None


def compile_world(text: str, where: str, textures: Mapping[str, bytes] | None = None) -> mujoco.MjModel:
    """The model of a world read from a file (checked first), `textures` the images it carries; any refusal is
    one DatasetError line."""
    check_world_xml(text, where, textures)
    return _mujoco(where, "compile", lambda: mujoco.MjModel.from_xml_string(text, dict(textures or {})))


def world_spec(text: str, where: str, textures: Mapping[str, bytes] | None = None) -> mujoco.MjSpec:
    """The editable spec of a world read from a file (checked first), e.g. to restyle or add to it; it carries
    `textures` (its `assets`), so that printing or compiling it finds them."""
    check_world_xml(text, where, textures)
    spec = _mujoco(where, "parse", lambda: mujoco.MjSpec.from_string(text))
    spec.assets = dict(textures or {})
    return spec


def make_data(model: mujoco.MjModel, where: str) -> mujoco.MjData:
    """mjData for a model compiled from a file (its arena size is the file's choice, within MEMORY_LIMIT)."""
    return _mujoco(where, "allocate", lambda: mujoco.MjData(model))
