"""OdinClient against real in-process servers: ask, index, channels, credentials, no-context fallback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2_grpc

from odin_client import ClientClosed, OdinClient, OdinSettings, ServiceUnavailable
from odin_client.protocol.files import discover
from tests.odin_client.servicers_support import ControlledFreki, FakeClock, free_port
from wolf_service.serving import build_grpc_server


def test_ask_passes_freki_context_to_geri_and_returns_sources(make_client, freki, geri):
    fsvc, fh = freki
    gsvc, gh = geri
    client = make_client(freki_target=fh.address, geri_target=gh.address, tenant_id="acme")
    answer = client.ask("Which port?", top_k=2, filters={"product": "skadi"}, mode="hybrid", max_tokens=64,
                        grounded=False)

    assert answer.text == "Answer to 'Which port?' from [gateway-ports,gateway-errors]: port 7443."
    assert [s.document_id for s in answer.sources] == ["gateway-ports", "gateway-errors"]
    assert answer.sources[0].score == pytest.approx(0.91) and answer.sources[0].source == "corpus/ports.md"
    assert answer.used_context and answer.note == ""
    assert answer.timings.total_ms >= answer.timings.retrieve_ms + answer.timings.generate_ms - 1
    retrieve_req = fsvc.rec.calls[0].request
    assert retrieve_req.model_type == common_pb2.RAG and retrieve_req.tenant_id == "acme"
    assert retrieve_req.retrieval.top_k == 2 and retrieve_req.retrieval.mode == common_pb2.SEARCH_MODE_HYBRID
    assert [(f.key, list(f.values)) for f in retrieve_req.retrieval.filters] == [("product", ["skadi"])]
    gen_req = gsvc.rec.calls[0].request
    assert gen_req.model_type == common_pb2.LLM and gen_req.metadata.max_tokens == 64
    assert [d.document_id for d in gen_req.context.documents] == ["gateway-ports", "gateway-errors"]


def test_ask_streaming_delivers_deltas_and_final_answer(make_client, freki, geri):
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    deltas: list[str] = []
    answer = client.ask("Which port?", on_text=deltas.append, grounded=False)
    assert deltas == ["The gateway ", "listens on ", "port 7443."]
    assert answer.text == "The gateway listens on port 7443."
    assert geri[0].rec.count("GenerateStream") == 1 and geri[0].rec.count("Generate") == 0


def test_freki_down_fails_naming_freki_unless_no_context_allowed(make_client, geri):
    gsvc, gh = geri
    client = make_client(freki_target=f"127.0.0.1:{free_port()}", geri_target=gh.address,
                         clock=FakeClock(), retry_max_attempts=3)
    with pytest.raises(ServiceUnavailable) as info:
        client.ask("Which port?", grounded=False)
    assert info.value.service == "freki" and "Freki (retrieval)" in str(info.value)
    assert gsvc.rec.count("Generate") == 0

    answer = client.ask("Which port?", allow_no_context=True, grounded=False)
    assert not answer.used_context and answer.sources == []
    assert "WITHOUT retrieved context" in answer.note and "Freki" in answer.note
    assert len(gsvc.rec.calls[-1].request.context.documents) == 0


def test_one_channel_per_target_reused_across_calls(make_client, freki, geri):
    fsvc, fh = freki
    gsvc, gh = geri
    client = make_client(freki_target=fh.address, geri_target=gh.address)
    assert client.channels.open_targets == []  # lazy: nothing opened before the first call
    for _ in range(3):
        client.ask("q", grounded=False)
    client.status()
    client.models()
    assert client.channels.open_targets == [fh.address, gh.address]
    # The servers saw every call arrive over a single connection each.
    assert len({c.peer for c in fsvc.rec.calls}) == 1 and len(fsvc.rec.calls) == 4
    assert len({c.peer for c in gsvc.rec.calls}) == 1 and len(gsvc.rec.calls) == 4


def test_use_after_close_is_refused(freki):
    fsvc, fh = freki
    with OdinClient(OdinSettings(freki_target=fh.address)) as client:
        client.status()
    with pytest.raises(ClientClosed, match="closed"):
        client.status()
    assert fsvc.rec.count("GetIndexStatus") == 1
    client.close()  # idempotent


def test_api_key_sent_as_bearer_metadata(make_client, freki):
    fsvc, fh = freki
    client = make_client(freki_target=fh.address, api_key="s3cret")
    client.retrieve("q")
    assert fsvc.rec.calls[0].metadata["authorization"] == "Bearer s3cret"
    assert "s3cret" not in repr(client.settings)


def test_index_folder_sends_what_a_watched_folder_would_and_reports_the_rest(make_client, freki, tmp_path: Path):
    """Same table as Freki's watched folders (wolf_service.filetypes): hidden, backup and known
    non-document files are skipped with a reason; everything else goes to Freki as bytes, typed by
    extension when it has a known one, left to Freki's detection otherwise (extensionless, .csv, .json)."""
    fsvc, fh = freki
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]", encoding="utf-8")
    (tmp_path / "a.md").write_text("---\ntitle: A\n---\n# A\nport 7443\n", encoding="utf-8")
    (tmp_path / "sub" / "b.txt").write_text("plain text", encoding="utf-8")
    (tmp_path / "sub" / "c.pdf").write_bytes(b"%PDF-1.4 fake\x00\xff")
    (tmp_path / "sub" / "README").write_text("no extension", encoding="utf-8")
    (tmp_path / "sub" / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (tmp_path / "image.gif").write_bytes(b"GIF89a")
    (tmp_path / ".hidden.md").write_text("secret", encoding="utf-8")
    (tmp_path / "notes.md~").write_text("backup", encoding="utf-8")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    client = make_client(freki_target=fh.address)
    seen: list[str] = []
    results = client.index([tmp_path], metadata={"team": "x"},
                           on_progress=lambda doc, _result: seen.append(doc.path.name))

    assert seen == ["a.md", "empty.md", "latin1.txt", "README", "b.txt", "c.pdf", "data.csv"]
    requests = {Path(c.request.source).name: c.request for c in fsvc.rec.calls}
    assert set(requests) == {"a.md", "latin1.txt", "README", "b.txt", "c.pdf", "data.csv"}  # empty.md: client-side
    assert requests["a.md"].content_type == "markdown" and b"port 7443" in requests["a.md"].content_bytes
    assert requests["c.pdf"].content_type == "pdf" and requests["c.pdf"].content_bytes.startswith(b"%PDF")
    assert requests["latin1.txt"].content_bytes == "Caf\xe9 cr\xe8me".encode("latin-1")  # Freki detects it
    assert requests["README"].content_type == "" and requests["data.csv"].content_type == ""
    assert all(r.content == "" for r in requests.values())
    assert dict(requests["b.txt"].metadata) == {"team": "x"}
    kinds = [type(r).__name__ for r in results]
    assert kinds == ["IndexResult", "InvalidRequest", *["IndexResult"] * 5]
    _, skipped = discover([tmp_path])
    reasons = {p.name: why for p, why in skipped}
    assert reasons == {".git": "folder excluded (matches '.*')", ".hidden.md": "excluded (matches '.*')",
                       "notes.md~": "excluded (matches '*~')",
                       "image.gif": "GIF image file, not a supported document format"}


def _make_certs(tmp: Path) -> dict[str, Path]:
    """A CA, a server cert for localhost and a client cert, made with the openssl CLI."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=test-ca")
    (tmp / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", "san.cnf")
    return {n: tmp / n for n in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def test_mutual_tls(tmp_path: Path):
    certs = _make_certs(tmp_path)
    creds = grpc.ssl_server_credentials(
        [(certs["server.key"].read_bytes(), certs["server.pem"].read_bytes())],
        root_certificates=certs["ca.pem"].read_bytes(), require_client_auth=True,
    )
    servicer = ControlledFreki()
    handle = build_grpc_server(
        register=lambda s: freki_pb2_grpc.add_FrekiServiceServicer_to_server(servicer, s),
        service_names=["wolf.v1.FrekiService"], address="127.0.0.1:0", credentials=creds,
    )
    try:
        target = f"localhost:{handle.port}"
        with OdinClient(OdinSettings(freki_target=target, tls_root_certs=certs["ca.pem"],
                                     tls_client_cert=certs["client.pem"],
                                     tls_client_key=certs["client.key"])) as client:
            assert client.status().document_count == 2
        # Without a client certificate the server refuses the handshake.
        with OdinClient(OdinSettings(freki_target=target, tls_root_certs=certs["ca.pem"],
                                     retry_max_attempts=1, deadline_s=5)) as client:
            with pytest.raises(ServiceUnavailable):
                client.status()
    finally:
        handle.stop(0)
    assert servicer.rec.count("GetIndexStatus") == 1


def test_settings_reject_half_an_mtls_pair(tmp_path: Path):
    with pytest.raises(ValueError, match="together"):
        OdinSettings(tls_client_cert=tmp_path / "c.pem")

