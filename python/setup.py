"""Builds the gradsync package; its gRPC stubs (gradsync.v1) are generated
from ../proto by build_stubs.py as it builds, never copied by hand.

Debian 12:
    python3 -m venv --system-site-packages ~/.venvs/gradsync
    ~/.venvs/gradsync/bin/pip install --no-build-isolation ./python
(Debian's python3-grpcio, python3-protobuf and python3-torch serve; the
system's protoc and grpc_python_plugin generate the stubs.)
"""
import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_stubs  # noqa: E402


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        build_stubs.generate(self.build_lib)


setup(cmdclass={"build_py": BuildWithStubs})
