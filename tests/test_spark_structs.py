"""Protobuf to Spark types without a Spark session (:func:`kafkatool.spark.structs.proto_type`): a message compiled
by the project's protoc, its derived struct, and a message decoded as the CLI decodes it (proto3 JSON, the schema's
field names) filled into that struct field for field."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")

PROTO = """syntax = "proto3";
package t;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

message Node {
  string name = 1;
  Node child = 2;
  repeated Node kids = 3;
}

message Outer {
  enum Kind {
    KIND_UNSPECIFIED = 0;
    BIG = 1;
  }
  message Inner {
    sint64 n = 1;
    repeated uint32 u = 2;
  }
  int64 big = 1;
  uint64 ubig = 2;
  fixed64 f64 = 3;
  int32 small = 4;
  uint32 usmall = 5;
  double d = 6;
  float f = 7;
  bool ok = 8;
  bytes blob = 9;
  Kind kind = 10;
  Inner inner = 11;
  repeated Inner inners = 12;
  map<int32, Inner> by_id = 13;
  map<string, string> tags = 14;
  oneof choice {
    string text = 15;
    Inner other = 16;
  }
  Node tree = 17;
  google.protobuf.Timestamp at = 18;
  google.protobuf.Int64Value maybe = 19;
  google.protobuf.Struct extra = 20;
  repeated string names = 21;
}
"""


@pytest.fixture(scope="module")
def outer():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from kafkatool.payloads.confluent import compile_proto

    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(compile_proto({"t.proto": PROTO}, "t.proto")).file:
        pool.Add(f)
    return pool.FindMessageTypeByName("t.Outer"), message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Outer"))


def test_each_protobuf_type_maps_to_the_spark_type_of_its_proto3_json(outer) -> None:
    from kafkatool.spark.structs import PROTO_RECURSION, proto_type

    t = proto_type(outer[0])
    inner = "struct<n:string,u:array<bigint>>"
    want = {"big": "string", "ubig": "string", "f64": "string", "small": "int", "usmall": "bigint", "d": "double",
            "f": "double", "ok": "boolean", "blob": "string", "kind": "string", "inner": inner,
            "inners": f"array<{inner}>", "by_id": f"map<string,{inner}>", "tags": "map<string,string>",
            "text": "string", "other": inner, "at": "string", "maybe": "string", "extra": "string",
            "names": "array<string>"}
    assert {f.name: f.dataType.simpleString() for f in t.fields if f.name != "tree"} == want
    assert all(f.nullable for f in t.fields)  # a field at its default is left out of the JSON; a oneof's others too
    # Node in itself: expanded PROTO_RECURSION times on each path, then its JSON text
    node = t["tree"].dataType
    for _ in range(PROTO_RECURSION):
        assert [f.name for f in node.fields] == ["name", "child", "kids"]
        assert node["kids"].dataType.elementType == node["child"].dataType
        node = node["child"].dataType
    assert node.simpleString() == "struct<name:string,child:string,kids:array<string>>"


def test_a_decoded_message_fills_its_struct_as_the_json_gives_it(outer) -> None:
    from google.protobuf import json_format

    from kafkatool.spark.structs import fill, proto_type

    desc, cls = outer
    msg = json_format.ParseDict({
        "big": "-9223372036854775808", "ubig": "18446744073709551615", "small": -5, "usmall": 4294967295,
        "d": "NaN", "f": 1.5, "ok": True, "blob": base64.b64encode(b"\x00\xff").decode(), "kind": "BIG",
        "inner": {"n": "-3", "u": [1, 4294967295]}, "by_id": {"7": {"n": "1"}}, "tags": {"a": "b"},
        "other": {"u": [2]}, "tree": {"name": "a", "child": {"child": {"child": {"name": "deep"}}}},
        "at": "2023-11-15T02:14:00.123Z", "maybe": "42", "extra": {"x": [1, "y"]}, "names": ["p", "q"]}, cls())
    decoded = json_format.MessageToDict(msg, preserving_proto_field_name=True)  # as the CLI decodes it
    got = fill(proto_type(desc), decoded)
    assert got["big"] == "-9223372036854775808" and got["ubig"] == "18446744073709551615"
    assert got["small"] == -5 and got["usmall"] == 4294967295 and got["f"] == 1.5 and got["d"] != got["d"]  # NaN
    assert got["blob"] == "AP8=" and got["kind"] == "BIG" and got["ok"] is True
    assert got["inner"] == {"n": "-3", "u": [1, 4294967295]} and got["by_id"] == {"7": {"n": "1", "u": None}}
    assert got["other"] == {"n": None, "u": [2]} and got["text"] is None  # the oneof's member set, the other null
    assert got["tree"]["child"]["child"] == {"name": None, "child": '{"name":"deep"}', "kids": None}
    assert got["at"] == "2023-11-15T02:14:00.123Z" and got["maybe"] == "42"  # well-known types: their JSON
    assert got["extra"] == '{"x":[1.0,"y"]}'  # a Struct's numbers are doubles
    assert got["names"] == ["p", "q"] and got["f64"] is None and got["inners"] is None
