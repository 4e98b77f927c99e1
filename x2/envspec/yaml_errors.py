"""A YAML syntax error in words: the line a person must fix, what is wrong there, what YAML wants instead.

PyYAML says where it gave up ("expected ',' or ']', but got '<stream end>'" at the end of the file) and, for an
unclosed bracket or quote, where that began: the line to fix is the beginning. Its phrases are matched here one
by one and put in a person's words; one it has not met stays in the parser's own words beside "valid YAML".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

_FLOW = {"while parsing a flow sequence": ("[", "]", "[a, b]"),
         "while parsing a flow mapping": ("{", "}", "{a: 1, b: 2}")}
_GOT = re.compile(r"but got '(.*)'$")
_FOUND = re.compile(r"but found '(.*)'$")
_CHARACTER = re.compile(r"found character '(.*)' that cannot start any token$")
_INDENTS = ("<block mapping start>", "<block sequence start>", "?")


@dataclass(frozen=True)
class YamlProblem:
    line: int | None  # 1-based: the line to fix
    found: str
    allowed: str


def explain(exc: yaml.MarkedYAMLError) -> YamlProblem:
    """The line to fix and the problem in words, from what PyYAML raised."""
    context, problem = exc.context or "", exc.problem or ""
    at = exc.problem_mark.line + 1 if exc.problem_mark else None
    began = exc.context_mark.line + 1 if exc.context_mark else at
    if context in _FLOW:
        opened, closing, example = _FLOW[context]
        got = _GOT.search(problem)
        reached = "the end of the file" if got is None or got.group(1) == "<stream end>" else repr(got.group(1))
        return YamlProblem(began, f"a {opened} opened on this line and not closed (the parser met {reached} at "
                                  f"line {at})", f"a closing {closing}, with a comma between items: {example}")
    if "quoted scalar" in context and "end of stream" in problem:
        return YamlProblem(began, "a quote opened on this line and never closed",
                           "a closing quote of the same kind at the end of the value")
    if problem.startswith("found unknown escape character"):
        escape = problem.rsplit(" ", 1)[-1].strip("'")
        return YamlProblem(at, f"the escape \\{escape} in double quotes", "a known escape (\\n, \\t, \\\\, \\\") or "
                           "single quotes, which keep a backslash as it is")
    if (char := _CHARACTER.match(problem)) is not None:
        if char.group(1) == "\\t":
            return YamlProblem(at, "a tab indenting this line", "spaces for indentation (YAML allows no tabs)")
        return YamlProblem(at, f"{char.group(1)!r} starting a value (YAML reserves it)",
                           f"quotes around the value (\"{char.group(1)}...\")")
    if problem == "mapping values are not allowed here":
        return YamlProblem(at, "a ': ' inside a value without quotes",
                           "quotes around a value that holds ': ' (\"Put it: here\"), a space after every key's ':' "
                           "(also on the line above), and the keys of one mapping indented alike")
    if problem == "could not find expected ':'":
        return YamlProblem(began, "a line that is not `key: value`", "`key: value`, with a space after the ':'")
    if (token := _FOUND.search(problem)) is not None and problem.startswith("expected <block end>"):
        if token.group(1) in _INDENTS:
            return YamlProblem(at, "a line indented differently from the keys before it",
                               "the keys of one mapping at the same indentation, with spaces")
        if token.group(1) == "-":
            return YamlProblem(at, "a '- ' list item among a mapping's keys",
                               "a list under its key (`key:`, then indented `- item` lines)")
        if token.group(1) == "<scalar>":
            return YamlProblem(at, "more text after a value's closing quote or bracket",
                               "quotes around the whole value (instruction: \"{block} on the plate\")")
    if problem.startswith("found undefined alias"):
        name = problem.rsplit(" ", 1)[-1].strip("'")
        return YamlProblem(at, f"*{name}, an alias with no &{name} anchor before it",
                           "an &anchor defined above its *alias")
    if problem == "but found another document":
        return YamlProblem(at, "a second document (---)", "one YAML document per spec file")
    # (what the parser said, as it said it: "found ..." reads twice in "found found ...")
    return YamlProblem(at or began, (problem or context).removeprefix("found "), "valid YAML")
