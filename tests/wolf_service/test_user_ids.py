"""The user id (``x-wolf-user``) beside the API key, on a real Freki and a real Geri (embedded model): validated
before any call runs, recorded in the audit log (on by default), binding Geri sessions to their user."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, geri_pb2, geri_pb2_grpc

from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.wolf_service.conftest import api_keys, bearer, freki_stub, index_request, retrieve_request
from wolf_service.audit_log import read_audit_log

pytestmark = pytest.mark.integration


def user(name: str) -> tuple[str, str]:
    return ("x-wolf-user", name)


def test_forged_and_oversize_user_ids_are_refused_before_the_call(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys(), "user_id_max_chars": 16})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        for bad, named in (("a" * 17, "security.user_id_max_chars=16"), ("eve<script>", "may only hold"),
                           ("", "empty"), ("x y", "may only hold")):
            with pytest.raises(grpc.RpcError) as err:
                stub.IndexDocument(index_request("u-doc", "A short note."), metadata=(*bearer("acme"), user(bad)))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and named in str(err.value.details())
        with pytest.raises(grpc.RpcError) as err:  # twice: which one would the audit believe?
            stub.RetrieveContext(retrieve_request("note"), metadata=(*bearer("acme"), user("a"), user("b")))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as err:
            stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="u-doc"), metadata=bearer("acme"))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND  # nothing was indexed by the refused calls
    events = list(read_audit_log(tmp_path / "audit.jsonl"))  # the default file: <data_dir>/audit.jsonl
    refused = [e for e in events if e["action"] == "freki.index_document"]
    assert [e["outcome"] for e in refused] == ["invalid_argument"] * 4
    assert {e["user"] for e in refused} == {"<invalid>"}  # a forged id is never copied into the log
    assert [e["action"] for e in events][-1] == "freki.get_document"


def test_audit_can_be_turned_off(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(audit_enabled=False)
    with grpc.insecure_channel(handle.address) as channel:
        freki_stub(channel).RetrieveContext(retrieve_request("anything"))
    assert not (tmp_path / "audit.jsonl").exists()


def test_a_geri_session_is_its_users_alone_and_stays_so_across_a_restart(embedded_backend, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    audit = tmp_path / "geri-audit.jsonl"
    settings = geri_settings(audit_log=audit, sessions={"store": "sqlite", "path": tmp_path / "sessions.db"})
    secret = "Zebrafinch-7731 is the alarm code"

    def generate(stub: geri_pb2_grpc.GeriServiceStub, prompt: str, who: str, owner: str = "") -> None:
        stub.Generate(common_pb2.WolfRequest(
            request_id="g", model_type=common_pb2.LLM, prompt=prompt,
            metadata=common_pb2.RequestMetadata(session_id="s-1", owner_id=owner, max_tokens=4)),
            metadata=(user(who),), timeout=120)

    def get(stub: geri_pb2_grpc.GeriServiceStub, who: str, session_id: str = "s-1") -> geri_pb2.Session:
        return stub.GetSession(geri_pb2.SessionRequest(request_id="s", session_id=session_id), metadata=(user(who),))

    def refusal(call: object) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as err:
            call()  # type: ignore[operator]
        return err.value

    with start_geri(settings, embedded_backend) as handle, grpc.insecure_channel(handle.address) as channel:
        stub = geri_pb2_grpc.GeriServiceStub(channel)
        generate(stub, f"Remember: {secret}. Say ok.", "agent-a")
        assert get(stub, "agent-a").user_id == "agent-a"
        missing = refusal(lambda: get(stub, "agent-b", "s-never"))
        taken = refusal(lambda: get(stub, "agent-b"))  # A's session answers B exactly as a missing one
        assert (taken.code(), taken.details()) == (missing.code(), missing.details().replace("s-never", "s-1"))
        assert taken.code() == grpc.StatusCode.NOT_FOUND
        assert not stub.DeleteSession(geri_pb2.SessionRequest(request_id="d", session_id="s-1"),
                                      metadata=(user("agent-b"),)).deleted
        generate(stub, "What was the code?", "agent-b", owner="agent-a")  # naming A's owner gains nothing
        mine = get(stub, "agent-b")
        assert "Zebrafinch" not in str(mine) and mine.turns[0].content == "What was the code?"
    with start_geri(settings, embedded_backend) as handle, grpc.insecure_channel(handle.address) as channel:
        stub = geri_pb2_grpc.GeriServiceStub(channel)  # a restarted Geri on the same SQLite file
        assert secret in get(stub, "agent-a").turns[0].content
        assert "Zebrafinch" not in str(get(stub, "agent-b"))
        assert refusal(lambda: stub.GetSession(geri_pb2.SessionRequest(request_id="s", session_id="s-1"))
                       ).code() == grpc.StatusCode.NOT_FOUND  # nor does a caller without a user id reach it
    events = [(e["action"], e["user"], e["outcome"]) for e in read_audit_log(audit)]
    assert events[:4] == [("geri.generate", "agent-a", "ok"), ("geri.get_session", "agent-a", "ok"),
                          ("geri.get_session", "agent-b", "not_found"), ("geri.get_session", "agent-b", "not_found")]
    assert "Zebrafinch" not in audit.read_text()
