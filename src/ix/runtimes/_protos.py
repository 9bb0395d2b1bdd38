"""Protocol buffers for the `grpc` runtime: a `.proto` compiled in process, or a server's
reflection, into a descriptor pool; a unary method found in it; its request template and
response paths checked against the messages.

The `.proto` is compiled by the protoc bundled with grpcio-tools (no download, no program
run, nothing written, nothing printed); its errors come back with file, line and column.
Every import here is lazy: ix starts as fast without grpc installed.
"""

import ast
import importlib.resources
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix.eval.json_path import JsonPath

if TYPE_CHECKING:
    import grpc
    from google.protobuf import descriptor as pb_descriptor
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_reflection.v1alpha import proto_reflection_descriptor_database as reflection_db
    from grpc_tools import _protoc_compiler as protoc
else:
    grpc = lazy("grpc")
    descriptor_pb2 = lazy("google.protobuf.descriptor_pb2")
    descriptor_pool = lazy("google.protobuf.descriptor_pool")
    message_factory = lazy("google.protobuf.message_factory")
    protoc = lazy("grpc_tools._protoc_compiler")
    reflection_db = lazy("grpc_reflection.v1alpha.proto_reflection_descriptor_database")

#: Message types json_format writes as a JSON value of their own (not an object of fields):
#: a path or a template goes no further into them.
_WELL_KNOWN = frozenset({"google.protobuf." + n for n in (
    "Any", "Struct", "Value", "ListValue", "Timestamp", "Duration", "FieldMask", "Empty",
    "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
    "BoolValue", "StringValue", "BytesValue")})

INSTALL_HINT = "the grpc runtime needs its extra: pip install 'ix-lab[grpc]'"


class ProtoError(Exception):
    """A `.proto` that cannot be used, or a method or field it does not have; `field`: the
    option it is about, when known (else the caller names it)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Method:
    """One unary method: its path on the wire and its two message classes."""

    path: str  # "/pkg.Service/Method"
    input: Any
    output: Any
    pool: Any

    @property
    def input_name(self) -> str:
        return str(self.input.DESCRIPTOR.full_name)

    @property
    def output_name(self) -> str:
        return str(self.output.DESCRIPTOR.full_name)


def import_grpc() -> None:
    """Import grpc and protobuf now, or `ProtoError` saying how to install them."""
    try:
        grpc.StatusCode  # noqa: B018 (the lazy import happens here)
        descriptor_pool.DescriptorPool  # noqa: B018
    except ImportError:
        raise ProtoError(INSTALL_HINT) from None


@dataclass(frozen=True)
class Protos:
    """A descriptor pool and the services it offers (full names)."""

    pool: Any
    services: tuple[str, ...]


def compile_proto(proto: Path, import_paths: Sequence[Path] = ()) -> Protos:
    """The descriptor pool of `proto` and everything it imports (Google's well-known types
    included). `ProtoError` with protoc's messages when it does not compile."""
    import_grpc()
    try:
        wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    except ImportError:
        raise ProtoError(INSTALL_HINT.replace("grpc]", "grpc] (grpcio-tools)")) from None
    if not proto.is_file():
        raise ProtoError(f"{str(proto)!r}: no such file")
    roots = [p.resolve() for p in [*import_paths, proto.parent]]
    for root in roots[:-1]:
        if not root.is_dir():
            raise ProtoError(f"import path {str(root)!r}: no such folder")
    source = proto.resolve()
    # protoc names a file by its path under the first root that holds it
    root = next(r for r in roots if source.is_relative_to(r))
    name = source.relative_to(root).as_posix()
    includes = [str(r) for r in roots] + [wkt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # protoc's warnings (an unused import): not ours
        try:  # its errors come back as values here, not printed on stderr
            modules = protoc.get_protos(name.encode(), [i.encode() for i in includes])
        except protoc.ProtocErrors as exc:
            raise ProtoError("; ".join(_protoc_error(e) for e in exc.errors()[:3])) from None
    files = {}
    for _, code in modules:
        file = descriptor_pb2.FileDescriptorProto.FromString(_serialized(code))
        files[file.name] = file
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file_name: str) -> None:  # each file after the files it imports
        if file_name not in added and file_name in files:
            added.add(file_name)
            for dependency in files[file_name].dependency:
                add(dependency)
            pool.Add(files[file_name])

    for file_name in files:
        add(file_name)
    services = [f"{f.package}.{s.name}" if f.package else s.name
                for f in files.values() for s in f.service]
    return Protos(pool, tuple(services))


def _serialized(code: bytes) -> bytes:
    """The serialized `FileDescriptorProto` in a module protoc generated for Python: the
    argument of its `AddSerializedFile(b'...')` (read, never run), as `grpc.protos` loads it."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "AddSerializedFile" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes):
            return node.args[0].value
    raise ProtoError("grpcio-tools' protoc wrote no descriptor this version of ix can read")


def _protoc_error(error: Any) -> str:
    def text(v: Any) -> str:
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)

    where = text(error.filename)
    if error.line >= 0:
        where += f":{error.line + 1}:{error.column + 1}"
    return f"{where}: {text(error.message)}"


def reflected(channel: Any) -> Protos:
    """A descriptor pool fed by the server's reflection service through a synchronous
    `channel` (files are fetched as the pool asks for them); blocks, raises `grpc.RpcError`."""
    try:
        database = reflection_db.ProtoReflectionDescriptorDatabase(channel)
    except ImportError:
        raise ProtoError(INSTALL_HINT.replace("grpc]", "grpc] (grpcio-reflection)")) \
            from None
    services = tuple(database.get_services())
    return Protos(descriptor_pool.DescriptorPool(database), services)


def find_method(protos: Protos, method: str) -> Method:
    """`pkg.Service/Method` in `protos`; `ProtoError` naming what is missing (and what is
    there), or saying that it streams."""
    service_name, _, method_name = method.lstrip("/").partition("/")
    pool = protos.pool
    if service_name not in protos.services:
        names = ", ".join(sorted(protos.services)) or "none"
        raise ProtoError(f"no service {service_name!r} (services: {names})")
    service = pool.FindServiceByName(service_name)
    found = service.methods_by_name.get(method_name)
    if found is None:
        names = ", ".join(sorted(service.methods_by_name)) or "none"
        raise ProtoError(f"service {service_name!r} has no method {method_name!r} "
                         f"(methods: {names})")
    if found.client_streaming or found.server_streaming:
        raise ProtoError(f"{service_name}/{method_name} streams; only unary methods are "
                         "called")
    return Method(f"/{service.full_name}/{found.name}",
                  message_factory.GetMessageClass(found.input_type),
                  message_factory.GetMessageClass(found.output_type), pool)


def check_request(template: Any, message: "pb_descriptor.Descriptor", where: str) -> None:
    """Each key of a mapping template is a field of `message` (by its name or JSON name),
    recursively into message fields; `ProtoError` at the first key that is not."""
    if not isinstance(template, Mapping) or message.full_name in _WELL_KNOWN:
        return
    for key, value in template.items():
        field = _field(message, str(key))
        if field is None:
            raise ProtoError(f"{message.full_name} has no field {key!r} (fields: "
                             f"{_fields(message)})", field=f"{where}.{key}")
        sub = field.message_type
        if sub is None or sub.GetOptions().map_entry:
            continue
        items = value if _repeated(field) and isinstance(value, list) else [value]
        for i, item in enumerate(items):
            check_request(item, sub, f"{where}.{key}" + (f"[{i}]" if _repeated(field) else ""))


def check_path(path: JsonPath, message: "pb_descriptor.Descriptor", where: str) -> None:
    """The fields a response path walks through exist (names as the reply's JSON spells
    them: the `.proto`'s); it stops checking where the reply's JSON is free-form."""
    current: pb_descriptor.Descriptor | None = message
    repeated = False
    for part in path:
        if current is None or current.full_name in _WELL_KNOWN or \
                current.GetOptions().map_entry:
            return
        if isinstance(part, int):
            if not repeated:
                raise ProtoError(f"[{part}] indexes a field that is not repeated",
                                 field=where)
            repeated = False
            continue
        if repeated:
            raise ProtoError(f"{part!r} follows a repeated field without an index",
                             field=where)
        field = current.fields_by_name.get(part)
        if field is None:
            raise ProtoError(f"{current.full_name} has no field {part!r} (fields: "
                             f"{_fields(current)})", field=where)
        repeated = _repeated(field) and not (field.message_type is not None
                                             and field.message_type.GetOptions().map_entry)
        current = field.message_type


def _field(message: "pb_descriptor.Descriptor", key: str) -> Any:
    return message.fields_by_name.get(key) or next(
        (f for f in message.fields if f.json_name == key), None)


def _repeated(field: Any) -> bool:
    # `is_repeated` since protobuf 5.28, where `label` went away
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else bool(field.label == field.LABEL_REPEATED)


def _fields(message: "pb_descriptor.Descriptor") -> str:
    return ", ".join(f.name for f in message.fields) or "none"


__all__ = ["INSTALL_HINT", "Method", "ProtoError", "Protos", "check_path", "check_request",
           "compile_proto", "find_method", "import_grpc", "reflected"]
