"""The small language that scripts/incidents/*.yaml use to describe log lines.

Placeholders inside `{...}` are filled left to right; each random one draws from the world's
seeded random.Random at that point, so the order of placeholders, lines and loops in the data
files IS the random stream (reordering them changes every generated file):

  {int:LO-HI}  {int:LO-HI:FMT}   a random int (FMT is a format spec, e.g. 02d)
  {choice:a|b|c}                 a random option
  {hex:BITS}                     random bits as zero-padded hex
  {expr} / {expr:FMT}            a name bound by let/each/loops, or arithmetic over such names

A timeline is a list of items, run in order:

  line     {at, service, level, message, host?, jitter?, kind?, when?}: one log line at `at`
           seconds after the world start plus a random jitter of 0..jitter ms (default 900),
           or {at_ms, ...}: at exactly at_ms milliseconds (no jitter drawn). Draw order:
           message, host, jitter, then a host for the service when `host` is absent.
  let      {let: {name: template}}: draw values in order; a lone placeholder keeps its type
  repeat   {repeat: {from, to, every}, do: [...]}: s = from, from+every, ... < to
  walk     {walk: {from, below, step}, do: [...]}: s = from; while s < below: ...; s += step
  each     {each: [{name: value}, ...], do: [...]}: once per mapping, its names bound
  random   {random: [{below: p, do: [...]}, ..., {do: [...]}]}: one draw, first branch it is below
  use      {use: macro}: run one of the world's named item lists

Times are seconds, "M:SS" (minutes:seconds) or an expression such as `s + 1` or `m * 60`.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

Value = int | float | str
Env = dict[str, Any]

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_MINUTES = re.compile(r"(\d+):(\d\d)")
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


class DefinitionError(Exception):
    """A data file uses something this language does not have."""


@dataclass(frozen=True)
class Line:
    ts: datetime
    service: str
    level: str
    message: str
    host: str
    kind: str  # "evidence" or "noise"; the self-check keeps key evidence out of noise


@dataclass(frozen=True)
class Hosts:
    prefix: Mapping[str, str]
    fixed: Mapping[str, list[str]]

    def pick(self, service: str, rng: random.Random) -> str:
        # A fixed host draws nothing: adding a random pick here would shift every later value.
        if service in self.fixed:
            return self.fixed[service][0]
        return f"{self.prefix[service]}-{rng.randint(1, 3)}"


def evaluate(expr: str, env: Mapping[str, Any]) -> Any:
    """Arithmetic and one comparison over names and numbers; the data files hold no code."""
    minutes = _MINUTES.fullmatch(expr.strip())
    if minutes:
        return int(minutes[1]) * 60 + int(minutes[2])
    return _node(ast.parse(expr.strip(), mode="eval").body, env)


def _node(node: ast.expr, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise DefinitionError(f"unknown name {node.id!r}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_node(node.left, env), _node(node.right, env))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _BINARY:
        return _BINARY[type(node.ops[0])](_node(node.left, env), _node(node.comparators[0], env))
    raise DefinitionError(f"unsupported expression: {ast.unparse(node)}")


def _fill(body: str, rng: random.Random, env: Mapping[str, Any]) -> Any:
    kind, _, rest = body.partition(":")
    if kind == "choice":
        return rng.choice(rest.split("|"))
    if kind == "hex":
        return format(rng.getrandbits(int(rest)), f"0{int(rest) // 4}x")
    if kind == "int":
        bounds, _, spec = rest.partition(":")
        low, high = (int(b) for b in bounds.split("-"))
        value: Any = rng.randint(low, high)
    elif body.isidentifier():
        return evaluate(body, env)
    else:
        expr, _, spec = body.partition(":")
        value = evaluate(expr, env)
    return format(value, spec) if spec else value


def render(template: str, rng: random.Random, env: Mapping[str, Any]) -> str:
    return PLACEHOLDER.sub(lambda m: str(_fill(m[1], rng, env)), template)


def draw(template: Value, rng: random.Random, env: Mapping[str, Any]) -> Any:
    """A let value: non-strings are literals; a lone placeholder keeps its type (for arithmetic)."""
    if not isinstance(template, str):
        return template
    lone = PLACEHOLDER.fullmatch(template)
    return _fill(lone[1], rng, env) if lone else render(template, rng, env)


def seconds(at: Value, env: Mapping[str, Any]) -> Any:
    return at if not isinstance(at, str) else evaluate(at, env)


class Timeline:
    """Runs timeline items for one world, appending to `lines` in script order."""

    def __init__(self, start: datetime, rng: random.Random, hosts: Hosts, macros: Mapping[str, list[Env]]) -> None:
        self.start, self.rng, self.hosts, self.macros = start, rng, hosts, macros
        self.lines: list[Line] = []

    def run(self, items: list[Env], env: Env) -> None:
        for item in items:
            self._item(item, env)

    def _item(self, item: Env, env: Env) -> None:
        if "message" in item:
            self._line(item, env)
        elif "let" in item:
            for name, template in item["let"].items():
                env[name] = draw(template, self.rng, env)
        elif "repeat" in item:
            spec = item["repeat"]
            for s in range(seconds(spec["from"], env), seconds(spec["to"], env), spec["every"]):
                self.run(item["do"], {**env, "s": s})
        elif "walk" in item:
            spec = item["walk"]
            s = seconds(spec["from"], env)
            while s < seconds(spec["below"], env):
                self.run(item["do"], {**env, "s": s})
                s += draw(spec["step"], self.rng, env)
        elif "each" in item:
            for values in item["each"]:
                self.run(item["do"], {**env, **values})
        elif "random" in item:
            roll = self.rng.random()
            branch: Env = next((b for b in item["random"] if "below" not in b or roll < b["below"]), {})
            self.run(branch.get("do", []), env)
        elif "use" in item:
            self.run(self.macros[item["use"]], env)
        else:
            raise DefinitionError(f"unknown timeline item: {item}")

    def _line(self, item: Env, env: Env) -> None:
        if "when" in item and not evaluate(str(item["when"]), env):
            return
        exact = "at_ms" in item
        at = seconds(item["at_ms"] if exact else item["at"], env)
        message = render(item["message"], self.rng, env)
        host = render(item["host"], self.rng, env) if "host" in item else None
        if exact:
            ts = self.start + timedelta(milliseconds=at)
        else:  # the jitter is drawn even when it is 0: the random stream counts that draw
            ts = self.start + timedelta(seconds=at, milliseconds=self.rng.randint(0, item.get("jitter", 900)))
        service = item["service"]
        host = host or self.hosts.pick(service, self.rng)
        self.lines.append(Line(ts, service, item["level"], message, host, item.get("kind", "evidence")))
