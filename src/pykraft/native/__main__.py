"""``python -m pykraft.native build [--force] | status``: compile ``MODULES`` with mypyc into
``build_dir()``, or say whether this interpreter would use the build (``pykraft.native``'s
docstring)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pykraft.native import MANIFEST, MODULES, SRC, SUFFIX, build_dir, check, digest, source_of

_SETUP = """
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from setuptools import setup
from distutils import ccompiler  # setuptools' own, once setuptools is imported
from mypyc.build import mypycify

# One C file per module (multi_file), compiled on every core: distutils compiles an
# extension's sources one after the other. The same steps as CCompiler.compile, the objects
# on a thread pool (each is a gcc process); without those internals, the serial compile.
serial = ccompiler.CCompiler.compile

def compile_in_parallel(self, sources, output_dir=None, macros=None, include_dirs=None,
                        debug=0, extra_preargs=None, extra_postargs=None, depends=None):
    if not (hasattr(self, "_setup_compile") and hasattr(self, "_get_cc_args")):
        return serial(self, sources, output_dir, macros, include_dirs, debug,
                      extra_preargs, extra_postargs, depends)
    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
        output_dir, macros, include_dirs, sources, depends, extra_postargs)
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)

    def one(obj):
        src, ext = build[obj]
        self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(one, [o for o in objects if o in build]))
    return objects

ccompiler.CCompiler.compile = compile_in_parallel
paths, target = sys.argv.pop(1).split(","), sys.argv.pop(1)
setup(
    name="pykraft-native",
    ext_modules=mypycify(paths, opt_level="3", target_dir=target, multi_file=True),
)
"""


def build(force: bool = False) -> Path:
    """Compile ``MODULES`` into ``build_dir()`` (nothing to do when it is current). The new
    build replaces the old one only once complete."""
    root = build_dir()
    current, _group = check(root, honour_env=False)
    if current.active and not force:
        return root
    import mypy.version

    digests = {module: digest(source_of(module)) for module in MODULES}
    paths = ",".join(str(source_of(m).relative_to(SRC)) for m in MODULES)
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        out = Path(tmp) / "lib"
        subprocess.run(
            [
                sys.executable,
                "-c",
                _SETUP,
                paths,
                str(Path(tmp) / "c"),
                "build_ext",
                "--build-lib",
                str(out),
                "--build-temp",
                str(Path(tmp) / "temp"),
            ],
            cwd=SRC,
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "MYPY_CACHE_DIR": str(Path(tmp) / "mypy-cache")},
        )
        groups = [p.name[: -len(SUFFIX)] for p in out.glob(f"*__mypyc{SUFFIX}")]
        if len(groups) != 1:
            raise RuntimeError(f"expected one mypyc group library in {out}, found {groups}")
        manifest = {
            "suffix": SUFFIX,
            "mypy": mypy.version.__version__,
            "group": groups[0],
            "modules": digests,
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if root.exists():
            old = Path(tmp) / "old"
            root.rename(old)
        out.rename(root)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["build"] or args == ["build", "--force"]:
        print(f"pykraft.native: built {build(force='--force' in args)}")
        return 0
    if args == ["status"]:
        verdict, _group = check()
        print(f"pykraft.native: {'on' if verdict.active else 'off'} ({verdict.reason})")
        return 0
    print("usage: python -m pykraft.native build [--force] | status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
