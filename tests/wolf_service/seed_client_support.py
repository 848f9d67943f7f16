"""A client that knows nothing of wolf.v1: only messages generated from the seed's own proto text.

Run by tests/wolf_service/test_seed_wire.py in a separate process whose import path holds just the
generated ``seed_pb2`` (so none of our stubs can stand in for it)::

    python seed_client_support.py STUBS_DIR ADDRESS < calls.json

``calls.json`` is a list of ``{"method": "/wolf.seed.FrekiService/RetrieveContext", "request": {...},
"metadata": [["authorization", "Bearer …"]]}``; the output is one JSON list with, per call, either
``{"response": {...}, "has": [...set fields...]}`` or ``{"code": "PERMISSION_DENIED", "details": "…"}``.
"""

import importlib
import json
import sys

import grpc
from google.protobuf import json_format


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    seed_pb2 = importlib.import_module("seed_pb2")  # generated from the seed's text at test time
    results = []
    with grpc.insecure_channel(sys.argv[2]) as channel:
        for call in json.load(sys.stdin):
            rpc = channel.unary_unary(call["method"], request_serializer=seed_pb2.WolfRequest.SerializeToString,
                                      response_deserializer=seed_pb2.WolfResponse.FromString)
            request = json_format.ParseDict(call["request"], seed_pb2.WolfRequest())
            try:
                response = rpc(request, metadata=[tuple(m) for m in call.get("metadata", [])], timeout=300)
            except grpc.RpcError as exc:
                results.append({"code": exc.code().name, "details": exc.details()})
                continue
            results.append({
                "response": json_format.MessageToDict(response, preserving_proto_field_name=True),
                "has": [field.name for field, _ in response.ListFields()],
                "model_type": int(response.model_type),
            })
    print(json.dumps(results))


if __name__ == "__main__":
    main()
