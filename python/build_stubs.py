"""Generates gradsync's gRPC and protobuf Python modules from proto/.

    python3 build_stubs.py OUT_DIR [PROTO_DIR]

writes OUT_DIR/gradsync/v1/*_pb2.py and *_pb2_grpc.py (the package
`gradsync.v1`, as the protos' package gradsync.v1 imports itself) with the
system's protoc and grpc_python_plugin (what builds the C++ side; Debian's
grpc_tools bundles a protoc too old for proto3 `optional`), else with
grpc_tools' protoc (a pip install of grpcio-tools). setup.py runs it when the package is built or
installed, CMake when it assembles build/python for the tests: the stubs
are never copied by hand, so a proto change that breaks the client breaks
a test. PROTO_DIR defaults to ../proto beside this file.
"""
import glob
import os
import shutil
import subprocess
import sys


def generate(out_dir, proto_dir=None):
    proto_dir = os.path.abspath(proto_dir or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "proto"))
    protos = sorted(glob.glob(os.path.join(proto_dir, "gradsync", "v1",
                                           "*.proto")))
    if not protos:
        raise SystemExit(f"build_stubs: no .proto files under {proto_dir}")
    os.makedirs(out_dir, exist_ok=True)
    outs = [f"-I{proto_dir}", f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}"]
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        done = subprocess.run([protoc, f"--plugin=protoc-gen-grpc_python={plugin}"]
                              + outs + protos).returncode
    else:
        from grpc_tools import protoc as tools
        done = tools.main(["grpc_tools.protoc",
                           "--experimental_allow_proto3_optional"] + outs +
                          protos)
    if done != 0:
        raise SystemExit("build_stubs: protoc failed")
    package = os.path.join(out_dir, "gradsync", "v1")
    open(os.path.join(package, "__init__.py"), "a").close()
    return package


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    print(generate(*sys.argv[1:]))
