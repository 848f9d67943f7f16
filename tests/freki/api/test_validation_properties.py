"""Property tests (hypothesis) of request validation: any request either passes or gets INVALID_ARGUMENT
with a short message, never another error; what passes satisfies the documented rules."""

from __future__ import annotations

import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wolf.v1 import common_pb2, freki_pb2

from freki.api import validation
from freki.ingest.quotas import METADATA_KEY, MetadataLimits, check_metadata
from freki.settings import FrekiSettings
from wolf_service.audit_log import MAX_DETAIL_CHARS, identifier
from wolf_service.errors import InvalidArgument
from wolf_service.identifiers import MAX_ID_BYTES

SETTINGS = FrekiSettings(data_dir="/nonexistent")
MESSAGE_LIMIT = 400
texts = st.text(max_size=600) | st.text(alphabet="ab-_./ @+:", min_size=1, max_size=600)


def refused_briefly(check, *args) -> bool:  # type: ignore[no-untyped-def]
    try:
        check(*args)
    except InvalidArgument as exc:
        assert len(str(exc)) < MESSAGE_LIMIT, str(exc)
        return True
    return False


@settings(max_examples=300, deadline=None)
@given(request_id=texts, document_id=texts, source=texts, content=st.text(max_size=50),
       owner=st.text(max_size=200), metadata=st.dictionaries(texts, st.text(max_size=10_000), max_size=80))
def test_index_requests_pass_or_get_a_short_invalid_argument(  # type: ignore[no-untyped-def]
    request_id, document_id, source, content, owner, metadata,
) -> None:
    request = freki_pb2.IndexDocumentRequest(request_id=request_id, document_id=document_id, source=source,
                                             content=content, owner_id=owner, metadata=metadata)
    if not refused_briefly(validation.validate_index, request, SETTINGS):
        assert request_id.strip() and content
        doc_id = document_id or source
        assert doc_id.strip() and len(doc_id.encode("utf-8", "surrogatepass")) <= MAX_ID_BYTES
        assert not any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in doc_id)
        assert len(metadata) <= SETTINGS.limits.metadata_keys
        assert all(METADATA_KEY.match(k) for k in metadata)


@settings(max_examples=300, deadline=None)
@given(prompt=st.text(max_size=300), top_k=st.integers(-5, 5000), threshold=st.floats(allow_nan=True),
       mode=st.integers(0, 5), keys=st.lists(texts, max_size=4), tenant=st.text(max_size=200),
       ids=st.lists(texts, max_size=3))
def test_retrieve_requests_pass_or_get_a_short_invalid_argument(  # type: ignore[no-untyped-def]
    prompt, top_k, threshold, mode, keys, tenant, ids,
) -> None:
    options = common_pb2.RetrievalOptions(top_k=top_k, score_threshold=threshold, document_ids=ids,
                                          filters=[common_pb2.MetadataFilter(key=k, values=["v"]) for k in keys])
    request = common_pb2.WolfRequest(request_id="r", model_type=common_pb2.RAG, prompt=prompt, tenant_id=tenant,
                                     retrieval=options)
    if not refused_briefly(validation.validate_retrieve, request, SETTINGS):
        stored = request.retrieval.score_threshold  # a proto float: what the server actually sees
        assert prompt.strip() and 0 <= top_k <= SETTINGS.retrieval.max_top_k and 0.0 <= stored <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=140), st.text(max_size=3000), max_size=70))
def test_metadata_limits_are_exact(metadata: dict[str, str]) -> None:
    limits = MetadataLimits(max_keys=50, max_value_chars=2000, max_bytes=20_000)
    size = sum(len(k.encode("utf-8", "surrogatepass")) + len(v.encode("utf-8", "surrogatepass"))
               for k, v in metadata.items())
    ok = (len(metadata) <= 50 and all(METADATA_KEY.match(k) for k in metadata)
          and all(len(v) <= 2000 for v in metadata.values()) and size <= 20_000)
    assert refused_briefly(check_metadata, metadata, limits) != ok


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=5000) | st.uuids().map(str))
def test_page_tokens_are_uuids_or_refused(token: str) -> None:
    if not refused_briefly(validation.validate_page_token, token):
        assert token == "" or str(uuid.UUID(token)) == validation.validate_page_token(token)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=3000), st.text(min_size=1, max_size=20))
def test_audit_identifiers_are_bounded_and_tell_long_ids_apart(prefix: str, tail: str) -> None:
    one, two = identifier(prefix * 3 + tail), identifier(prefix * 3 + tail + "x")
    assert len(one) <= MAX_DETAIL_CHARS and len(two) <= MAX_DETAIL_CHARS
    assert one != two


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Cf")), min_size=1, max_size=200)
       .filter(str.strip))
def test_every_printable_id_is_accepted_exactly(document_id: str) -> None:
    assert validation.require_document_id(document_id) == document_id


def test_an_identifier_with_a_final_newline_is_refused() -> None:
    """re's "$" also matches before a final newline: "acme\\n" must not pass as the tenant "acme"'s twin."""
    from freki.api.access import requested_groups
    from freki.api.backups import backup
    from wolf_service.identity import UserIdError, checked_user_id

    assert refused_briefly(validation.tenant_of, "acme\n", SETTINGS)
    owned = freki_pb2.IndexDocumentRequest(request_id="r", document_id="d", content=b"x", owner_id="ann\n")
    assert refused_briefly(validation.validate_index, owned, SETTINGS)
    grouped = freki_pb2.IndexDocumentRequest(request_id="r", document_id="d", access_groups=["hr\n"])
    assert refused_briefly(requested_groups, grouped, SETTINGS)
    keyed = freki_pb2.IndexDocumentRequest(request_id="r", document_id="d", content=b"x", metadata={"team\n": "a"})
    assert refused_briefly(validation.validate_index, keyed, SETTINGS)
    backups_on = FrekiSettings(data_dir="/nonexistent", backup={"dir": "/nonexistent-backups"})
    named = freki_pb2.CreateBackupRequest(request_id="r", name="nightly\n")
    assert refused_briefly(backup, None, backups_on, named)  # refused before the engine is touched
    with pytest.raises(UserIdError, match="may only hold"):
        checked_user_id("ann\n", 128)
