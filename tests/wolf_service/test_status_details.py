"""Rich status details on a real Freki: every refusal keeps its code and message and adds a stable reason, a
hint, the bad field, the setting and limit, and a retry delay only where a retry can succeed; Odin's errors
carry them to Python callers."""

from __future__ import annotations

import grpc
import pytest
from wolf.v1 import freki_pb2

from odin_client.types.errors import InvalidRequest, PermissionDenied, from_rpc_error
from tests.wolf_service.conftest import api_keys, bearer, freki_stub, index_request, retrieve_request
from wolf_service.status_details import details_of, unpacked

pytestmark = pytest.mark.integration


def refused(call, *args, **kwargs) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as raised:
        call(*args, **kwargs)
    return raised.value


def test_refusals_carry_reason_hint_field_setting_and_limit(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys()}, max_document_bytes=100)
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        acme = bearer("acme")

        missing = refused(stub.RetrieveContext, retrieve_request("port?"))
        assert missing.code() == grpc.StatusCode.UNAUTHENTICATED and "missing API key" in missing.details()
        found = unpacked(details_of(missing))
        assert (found["ErrorInfo"].reason, found["ErrorInfo"].domain) == ("MISSING_API_KEY", "wolf.v1.FrekiService")
        assert "authorization: Bearer" in found["LocalizedMessage"].message and "RetryInfo" not in found
        assert found["Help"].links[0].url == "docs/operations.md#error-details"
        odin = from_rpc_error(missing, service="freki", method="RetrieveContext", attempts=1)
        assert isinstance(odin, PermissionDenied) and odin.reason == "MISSING_API_KEY" and odin.hint

        other = refused(stub.RetrieveContext, retrieve_request("port?", tenant="globex"), metadata=acme)
        assert unpacked(details_of(other))["ErrorInfo"].reason == "OTHER_TENANT"

        empty = refused(stub.RetrieveContext, retrieve_request(""), metadata=acme)
        assert empty.code() == grpc.StatusCode.INVALID_ARGUMENT
        found = unpacked(details_of(empty))
        assert found["ErrorInfo"].reason == "INVALID_ARGUMENT" and found["ErrorInfo"].metadata["request_id"] == "ret-1"
        violation = found["BadRequest"].field_violations[0]
        assert violation.field == "prompt" and violation.description == empty.details()
        odin = from_rpc_error(empty, service="freki", method="RetrieveContext", attempts=1)
        assert isinstance(odin, InvalidRequest) and odin.field == "prompt" and odin.error_metadata["request_id"]

        gone = refused(stub.GetDocument, freki_pb2.GetDocumentRequest(document_id="nope"),
                       metadata=acme)
        assert gone.code() == grpc.StatusCode.NOT_FOUND
        assert unpacked(details_of(gone))["ErrorInfo"].reason == "NOT_FOUND"

        big = refused(stub.IndexDocument, index_request("big", "word " * 200), metadata=acme)
        assert big.code() == grpc.StatusCode.INVALID_ARGUMENT
        found = unpacked(details_of(big))
        info = found["ErrorInfo"]
        assert info.metadata["setting"] == "max_document_bytes" and info.metadata["limit"] == "100", big.details()
        assert "`max_document_bytes`" in found["LocalizedMessage"].message
        assert found["Help"].links[1].url == "docs/operations.md#limits"
        assert "RetryInfo" not in found  # the same document is refused again: no retry delay is promised


def test_a_limit_exceeded_names_its_setting_and_a_busy_service_its_retry_delay() -> None:
    """The details of the domain errors Freki's parsers and Geri's backends raise (no server needed)."""
    from freki.ingest.parsing.errors import LimitExceeded
    from wolf_service.errors import Unavailable
    from wolf_service.status_details import rich_status

    too_big = LimitExceeded("the text is 9,000 characters, over the limit of 200 (limits.max_text_chars)",
                            setting="limits.max_text_chars")
    found = unpacked(rich_status(grpc.StatusCode.RESOURCE_EXHAUSTED, str(too_big), domain="wolf.v1.FrekiService",
                                 exc=too_big))
    assert found["ErrorInfo"].reason == "LIMIT_EXCEEDED"
    assert dict(found["ErrorInfo"].metadata) == {"setting": "limits.max_text_chars", "limit": "200"}
    assert "RetryInfo" not in found
    down = Unavailable("no backend could answer: ollama 'llama3.2' (priority 0): connection refused")
    found = unpacked(rich_status(grpc.StatusCode.UNAVAILABLE, str(down), domain="wolf.v1.GeriService", exc=down))
    assert found["ErrorInfo"].reason == "UNAVAILABLE" and found["RetryInfo"].retry_delay.seconds == 1
