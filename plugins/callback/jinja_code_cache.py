# Copyright: clusterforge contributors
# Apache License 2.0
"""Compiled Jinja templates kept, so no forked worker compiles the same template again.

ansible-core compiles every template string it renders (a task's arguments, its `when`, every
variable whose value is a template) from scratch: lexing, Jinja's code generation and Python's
compile(), in each forked worker, for each host and task, and throws the result away with the
worker. The Python code Jinja generates depends only on the template's text and the compile
settings, not on the variables it is rendered with, so this plugin keeps it: in memory (what the
main process compiled before forking, every worker inherits) and on disk, as marshalled code
objects under the same trust rule as Python's __pycache__ (one directory per Python, Jinja and
ansible-core version, that only its owner may write), so the next worker, task and run load it
instead. bench/fleet.py measures the saving.
"""

from __future__ import annotations

import contextvars
import hashlib
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: jinja_code_cache
type: aggregate
short_description: Keeps the code Jinja compiles templates to, across workers, tasks and runs
description:
  - "Wraps the compile step of ansible-core's Jinja environment: a template already compiled with
    the same text and settings (delimiters, whitespace handling, backslash escaping, extensions) is
    loaded instead of being lexed, code-generated and compiled again."
  - "Memory first (what the main process compiled is inherited by each forked worker), then
    C(~/.cache/clusterforge/jinja-code/<python>-jinja<version>-ansible<version>/) (or under
    C($XDG_CACHE_HOME)), one marshalled code object per template, written atomically, in a
    directory only its owner may use (like Python's __pycache__, whose trust model it shares).
    Past 20,000 files, a playbook's start removes the older half."
  - "Rendering is unchanged: the cached code runs in the task's own environment, with its own
    filters, tests and variables. A template that fails to compile is never cached, so its error
    is reported as before."
  - "Off (a note at -vvvv) on an ansible-core whose templating internals it does not know, and while
    ansible-core's template debugging is on."
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""

# Templates larger than this are compiled as usual: they are rare (whole files), and the cache
# is meant for the many small strings every task templates.
MAX_SOURCE_CHARS = 256 * 1024
MAX_IN_MEMORY = 8192
# A project has a few thousand template strings; edited templates leave their old code behind.
# Past this many files, a run's start removes the older half (by last write).
MAX_FILES = 20000

# The key of the expression being compiled, between compile_expression and the compile() it calls
# with a node tree (which has no text to key on).
_PENDING_EXPRESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("jinja_code_cache_expr", default=None)


def cache_directory() -> Path:
    """Per user, per Python, Jinja and ansible-core: marshalled code is only valid for one Python,
    and the code Jinja generates changes with Jinja and with ansible-core's code generator."""
    import jinja2
    from ansible.release import __version__ as ansible_version

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    tag = f"{sys.implementation.cache_tag}-jinja{jinja2.__version__}-ansible{ansible_version}"
    return base / "clusterforge" / "jinja-code" / tag


class CodeCache:
    """Code objects by key: a bounded dict in memory, one file per key on disk."""

    def __init__(self, directory: Path | None):
        self.memory: dict[str, types.CodeType] = {}
        self.directory = directory if directory is not None and self._private(directory) else None

    @staticmethod
    def _private(directory: Path) -> bool:
        """The directory exists, belongs to this user and only this user can write to it: code is
        loaded from it, so nobody else may put files there."""
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = directory.stat()
        except OSError:
            return False
        return info.st_uid == os.getuid() and not info.st_mode & 0o022

    @staticmethod
    def key(*parts: object) -> str:
        return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> types.CodeType | None:
        code = self.memory.get(key)
        if code is not None or self.directory is None:
            return code
        try:
            code = marshal.loads((self.directory / key).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None  # not there yet, or a torn or foreign file: compile as usual
        if not isinstance(code, types.CodeType):
            return None
        self._remember(key, code)
        return code

    def put(self, key: str, code: types.CodeType) -> None:
        self._remember(key, code)
        if self.directory is None:
            return
        # Written to a temporary file and renamed: workers in parallel never read half a file.
        try:
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(handle, "wb") as output:
                output.write(marshal.dumps(code))
            os.replace(temporary, self.directory / key)
        except OSError:
            pass  # a full or read-only disk costs the saving, not the run

    def prune(self, limit: int = MAX_FILES) -> int:
        """Keeps the directory bounded: past `limit` files, the older half goes. Returns how many."""
        if self.directory is None:
            return 0
        try:
            entries = [entry for entry in os.scandir(self.directory) if entry.is_file()]
            if len(entries) <= limit:
                return 0
            entries.sort(key=lambda entry: entry.stat().st_mtime)
            for entry in entries[: len(entries) - limit // 2]:
                os.unlink(entry.path)
        except OSError:
            return 0  # another run pruning at the same time: its result will do
        return len(entries) - limit // 2

    def _remember(self, key: str, code: types.CodeType) -> None:
        if len(self.memory) >= MAX_IN_MEMORY:
            self.memory.clear()
        self.memory[key] = code


def install(cache: CodeCache) -> str | None:
    """Wraps AnsibleEnvironment's compile and compile_expression with `cache`. Returns why not,
    where it cannot (an ansible-core whose internals differ)."""
    try:
        from ansible._internal._templating._jinja_bits import (
            _TEMPLATE_OVERRIDE_FIELD_NAMES,
            AnsibleEnvironment,
            _TemplateCompileContext,
        )
        from jinja2 import nodes
        from jinja2.environment import TemplateExpression
    except ImportError as missing:
        return f"ansible-core's templating internals differ from 2.19's ({missing})"
    if getattr(AnsibleEnvironment, "_clusterforge_code_cache", None) is not None:
        AnsibleEnvironment._clusterforge_code_cache = cache  # installed already: swap the cache
        return None

    original_compile = AnsibleEnvironment.compile
    original_compile_expression = AnsibleEnvironment.compile_expression

    def settings(env) -> tuple:
        """What the generated code depends on besides the template's text."""
        context = _TemplateCompileContext.current(optional=True)
        return (
            type(env).__qualname__,
            tuple(getattr(env, name) for name in _TEMPLATE_OVERRIDE_FIELD_NAMES),
            env.optimized,
            env.is_async,
            tuple(sorted(env.extensions)),
            bool(context and context.escape_backslashes),
        )

    def cacheable(env, source) -> bool:
        return not env._debuggable_template_source and len(source) <= MAX_SOURCE_CHARS

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        active = AnsibleEnvironment._clusterforge_code_cache
        if isinstance(source, nodes.Template):
            key = _PENDING_EXPRESSION.get()
            _PENDING_EXPRESSION.set(None)  # only the expression's own compile, not nested ones
        elif isinstance(source, str) and cacheable(self, source):
            key = active.key("template", str(source), name, filename, defer_init, settings(self))
        else:
            key = None
        if key is None or raw:
            return original_compile(self, source, name, filename, raw, defer_init)
        code = active.get(key)
        if code is None:
            code = original_compile(self, source, name, filename, raw, defer_init)
            if isinstance(code, types.CodeType):
                active.put(key, code)
        return code

    def compile_expression(self, source, undefined_to_none=True):
        active = AnsibleEnvironment._clusterforge_code_cache
        if not isinstance(source, str) or not cacheable(self, source):
            return original_compile_expression(self, source, undefined_to_none)
        key = active.key("expression", str(source), settings(self))
        code = active.get(key)
        if code is None:
            token = _PENDING_EXPRESSION.set(key)
            try:
                return original_compile_expression(self, source, undefined_to_none)
            finally:
                _PENDING_EXPRESSION.reset(token)
        template = self.template_class.from_code(self, code, self.make_globals(None), None)
        return TemplateExpression(template, undefined_to_none)

    AnsibleEnvironment._clusterforge_code_cache = cache
    AnsibleEnvironment.compile = compile
    AnsibleEnvironment.compile_expression = compile_expression
    return None


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "jinja_code_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        # Installed when the plugin loads, in the main process, before any worker is forked.
        self._cache = CodeCache(cache_directory())
        reason = install(self._cache)
        if reason:
            self._display.vvvv(f"jinja_code_cache: off: {reason}")

    def v2_playbook_on_start(self, playbook):
        removed = self._cache.prune()
        if removed:
            self._display.vvv(f"jinja_code_cache: removed {removed} older entries from {self._cache.directory}")
