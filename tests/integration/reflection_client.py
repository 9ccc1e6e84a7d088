#!/usr/bin/python3
"""A gRPC client that gradsync did not write discovers the coordinator's API
through server reflection, as grpcurl does: it lists the services, fetches
the descriptors of gradsync.v1.JobService, and calls SubmitJob/ListJobs by
name with messages built at run time, and the snapshot calls ListSnapshots
and PullSnapshot (NOT_FOUND for an unknown job). Also checks
grpc.health.v1.

Usage: reflection_client.py PATH/TO/gradsync-coordinator"""
import os
import re
import subprocess
import sys
import tempfile

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf import message_factory
from grpc_tools import protoc

REFLECTION_PROTO = "/usr/share/grpc-proto/grpc/reflection/v1alpha/reflection.proto"
HEALTH_PROTO = "/usr/share/grpc-proto/grpc/health/v1/health.proto"


def compile_protos(out_dir):
    # Flat copies, so the generated modules do not shadow the grpc package.
    for proto in (REFLECTION_PROTO, HEALTH_PROTO):
        flat = os.path.join(out_dir, os.path.basename(proto))
        with open(proto) as src, open(flat, "w") as dst:
            dst.write(src.read())
        rc = protoc.main(["protoc", f"-I{out_dir}", f"--python_out={out_dir}",
                          f"--grpc_python_out={out_dir}", flat])
        assert rc == 0, f"protoc failed for {proto}"
    sys.path.insert(0, out_dir)


def start_coordinator(binary):
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0"],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on port (\d+)", line)
        if m:
            return proc, int(m.group(1))
    raise RuntimeError("coordinator did not report its port")


def reflect(channel, request_kwargs):
    import reflection_pb2
    import reflection_pb2_grpc
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(**request_kwargs)
    responses = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    assert len(responses) == 1
    return responses[0]


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        compile_protos(tmp)
        proc, port = start_coordinator(binary)
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            grpc.channel_ready_future(channel).result(timeout=10)

            # 1. list services
            resp = reflect(channel, {"list_services": ""})
            services = sorted(s.name for s in resp.list_services_response.service)
            print("services:", ", ".join(services))
            for want in ("gradsync.v1.JobService", "gradsync.v1.WorkerService",
                         "grpc.health.v1.Health"):
                assert want in services, f"{want} not listed: {services}"

            # 2. descriptors of JobService (with dependencies)
            resp = reflect(channel,
                           {"file_containing_symbol": "gradsync.v1.JobService"})
            pool = descriptor_pool.DescriptorPool()
            pending = [descriptor_pb2.FileDescriptorProto.FromString(b)
                       for b in resp.file_descriptor_response.file_descriptor_proto]
            added = set()
            while pending:  # add files after their dependencies
                progress = False
                for fd in list(pending):
                    if all(d in added for d in fd.dependency):
                        pool.Add(fd)
                        added.add(fd.name)
                        pending.remove(fd)
                        progress = True
                assert progress, "unresolvable descriptor dependencies"
            service = pool.FindServiceByName("gradsync.v1.JobService")
            method = service.methods_by_name["ListJobs"]

            def message_class(descriptor):
                return message_factory.MessageFactory(pool).GetPrototype(descriptor)

            # 3. call ListJobs by name only
            list_jobs = channel.unary_unary(
                "/gradsync.v1.JobService/ListJobs",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=message_class(method.output_type).FromString)
            reply = list_jobs(message_class(method.input_type)(), timeout=10)
            print("ListJobs:", json_format.MessageToJson(reply) or "{}")
            assert len(reply.jobs) == 0

            # 4. a bad SubmitJob by name gets INVALID_ARGUMENT naming the field
            submit = service.methods_by_name["SubmitJob"]
            submit_call = channel.unary_unary(
                "/gradsync.v1.JobService/SubmitJob",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=message_class(submit.output_type).FromString)
            request = message_class(submit.input_type)()
            json_format.Parse('{"spec": {"model": "mlp", "batch_size": 0}}', request)
            try:
                submit_call(request, timeout=10)
                raise AssertionError("invalid SubmitJob was accepted")
            except grpc.RpcError as e:
                print("SubmitJob(bad):", e.code(), e.details())
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "dataset.path" in e.details()

            # 5. the snapshot calls are there by name too: ListSnapshots
            # (unary) and PullSnapshot (server-streaming) of an unknown job
            # answer NOT_FOUND naming it.
            for name, call in (("ListSnapshots", channel.unary_unary),
                               ("PullSnapshot", channel.unary_stream)):
                method = service.methods_by_name[name]
                stub_call = call(
                    f"/gradsync.v1.JobService/{name}",
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=message_class(
                        method.output_type).FromString)
                request = message_class(method.input_type)()
                json_format.Parse('{"job_id": "no-such-job"}', request)
                try:
                    reply = stub_call(request, timeout=10)
                    if name == "PullSnapshot":
                        list(reply)
                    raise AssertionError(f"{name} of an unknown job answered")
                except grpc.RpcError as e:
                    print(f"{name}(unknown job):", e.code(), e.details())
                    assert e.code() == grpc.StatusCode.NOT_FOUND, e.code()
                    assert "no-such-job" in e.details(), e.details()

            # 6. health
            import health_pb2
            import health_pb2_grpc
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=10)
            print("health:", health_pb2.HealthCheckResponse.ServingStatus.Name(
                health.status))
            assert health.status == health_pb2.HealthCheckResponse.SERVING
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print("reflection client: 1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
