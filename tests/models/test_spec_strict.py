"""Model specs are parsed strictly: no request goes to a host other than the one written,
no key goes to a host it was not bound to, every bad option is one line (issue 27)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from tests.models._capture import CaptureServer
from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.fields import Boolean, FieldSpec
from truthline.models import InfraError, ModelRequest, get_backend, parse_model_spec
from truthline.models._openai import completion_from
from truthline.models._spec import ModelSpecError
from truthline.models._types import AuthError
from truthline.store import tables

runner = CliRunner()
TRUTHLINE = [sys.executable, "-c", "from truthline.cli import main; main()"]


@pytest.fixture
def server():
    s = CaptureServer().start()
    yield s
    s.stop()


@pytest.fixture
def steel_ws(tmp_path):
    """steel-safety with 16 SIMULATED items and their gold (prefill and benchmark run)."""
    from tests.benchmark.conftest import make_bench_ws

    ws, _, _, _ = make_bench_ws(tmp_path / "ws")
    yield ws
    ws.store.close()


def _one_line_error(spec: str) -> str:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(spec)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("model spec ")
    return msg


def _ask(be) -> object:
    req = ModelRequest(
        project="",
        item_id=None,
        purpose="check",
        system=None,
        user="say ok",
        images=[],
        fields={"ok": Boolean("ok", FieldSpec(type="boolean"))},
        settings={"max_tokens": 8},
    )

    async def go():
        try:
            return await be.complete(req)
        finally:
            await be.aclose()

    return asyncio.run(go())


# -- endpoints -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, problem",
    [
        ("127.0.0.1:8000/v1", "has no scheme"),
        ("localhost:8000", "has no scheme"),
        ("api.example.com/v1", "has no scheme"),
        ("ftp://127.0.0.1/v1", "scheme 'ftp'"),
        ("http://127.0.0.1:99999/v1", "invalid port"),
        ("http://127.0.0.1:0/v1", "port '0'"),
        ("http://127.0.0.1:08/v1", "no leading zero"),
        ("http://127.0.0.1:/v1", "empty port"),
        ("http:///v1", "no host"),
        ("http://exa mple.com/v1", "cannot hold"),
        ("http://ex\u00e4mple.com/v1", "cannot hold"),
        ("http://evil.com\\@good.com/v1", "cannot hold"),
        ("http://h/v1?api-version=1", "query or fragment"),
        ("http://h/v1#frag", "query or fragment"),
        ("http://-bad-.com/v1", "invalid host"),
        ("", "has no scheme"),
    ],
)
def test_an_endpoint_must_be_a_full_http_url(url, problem):
    msg = _one_line_error(f"openai:qwen@{url}")
    assert problem in msg and "e.g. @http" in msg


def test_a_schemeless_endpoint_says_what_to_write():
    msg = _one_line_error("openai:qwen@127.0.0.1:8000/v1")
    assert "@http://127.0.0.1:8000/v1" in msg and "api.openai.com" not in msg


def test_scheme_is_lower_cased_and_host_is_the_one_written():
    s = parse_model_spec("openai:qwen@HTTP://LocalHost:8000/v1;alias=q")
    assert s.url == "http://LocalHost:8000/v1" and s.host == "localhost:8000"
    assert s.name == "qwen" and s.text == "openai:qwen@http://LocalHost:8000/v1;alias=q"
    assert parse_model_spec("openai:m@https://[::1]:9/v1").host == "[::1]:9"
    assert parse_model_spec("openai:gpt-4o-mini").host is None


def test_a_name_cannot_carry_an_at_sign_and_local_kinds_take_no_url():
    assert "cannot contain '@'" in _one_line_error("openai:claude@20240620")
    assert "takes no @URL" in _one_line_error("hf:/models/x@http://127.0.0.1:1/v1")
    assert "takes no @URL" in _one_line_error("simulated:steel-v1@http://h/v1")


def test_a_password_in_a_bad_url_is_never_shown():
    for spec in (
        "openai:m@user:s3cret@127.0.0.1:8000/v1",
        "openai:m@http://user:s3cret@127.0.0.1:99999/v1",
        "openai:m@http://user:s3c;ret@127.0.0.1:8000/v1",
        "openai:m@ftp://user:s3cret@h/v1",
    ):
        msg = _one_line_error(spec)
        assert "s3c" not in msg, msg


def test_prefill_with_a_schemeless_url_sends_nothing(steel_ws, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-NOT-FOR-LOCAL")
    spec = f"openai:qwen@127.0.0.1:{server.port}/v1"
    r = runner.invoke(app, ["--workspace", str(steel_ws.root), "prefill", "run", "-m", spec])
    assert r.exit_code == 1
    msg = str(r.exception)
    assert "has no scheme" in msg and "\n" not in msg
    assert server.seen == []
    with steel_ws.store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar() == 0


def test_models_check_with_a_schemeless_url_exits_1_with_one_line(server):
    r = subprocess.run(
        [*TRUTHLINE, "models", "check", f"openai:qwen@HTTP//127.0.0.1:{server.port}/v1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no scheme" in lines[0] and "api.openai.com" not in lines[0]
    assert server.seen == []


# -- where keys go ---------------------------------------------------------------------------


def test_openai_key_never_goes_to_a_host_named_in_the_spec(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-OPENAI-ONLY")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-SECRET")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-SECRET")
    monkeypatch.setenv(
        "OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-AMBIENT\nX-Team-Token: tt-SECRET"
    )
    comp = _ask(get_backend(f"openai:qwen@{server.url}"))
    assert comp.text == '{"ok": true}'
    (path, headers) = server.seen[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer EMPTY"
    sent = json.dumps(headers)
    for secret in ("sk-OPENAI-ONLY", "org-SECRET", "proj-SECRET", "sk-AMBIENT", "tt-SECRET"):
        assert secret not in sent


def test_a_key_bound_in_the_spec_goes_to_its_host(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-OPENAI-ONLY")
    monkeypatch.setenv("LOCAL_KEY", "sk-local-123")
    _ask(get_backend(f"openai:qwen@{server.url};key_env=LOCAL_KEY"))
    assert server.seen[-1][1]["authorization"] == "Bearer sk-local-123"
    assert "sk-OPENAI-ONLY" not in json.dumps(server.seen)


def test_key_file_is_read_and_a_missing_one_is_an_error(server, tmp_path):
    f = tmp_path / "key"
    f.write_text("sk-from-file\n")
    _ask(get_backend(f"openai:qwen@{server.url};key_file={f}"))
    assert server.seen[-1][1]["authorization"] == "Bearer sk-from-file"
    with pytest.raises(TruthlineError, match="cannot read the key"):
        get_backend(f"openai:qwen@{server.url};key_file={tmp_path / 'nope'}")


def test_key_env_naming_an_unset_variable_is_an_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(TruthlineError, match="key_env=NO_SUCH_KEY_VAR names an environment"):
        get_backend("openai:gpt-4o;key_env=NO_SUCH_KEY_VAR")


def test_openai_key_goes_to_api_openai_com_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert get_backend("openai:gpt-4o")._key == "sk-real"
    assert get_backend("openai:gpt-4o@https://api.openai.com/v1")._key == "sk-real"
    assert get_backend("openai:gpt-4o@http://api.openai.com/v1")._key == "EMPTY"  # no TLS
    assert get_backend("openai:gpt-4o@https://api.openai.com.evil.io/v1")._key == "EMPTY"
    assert get_backend("openai:gpt-4o@http://127.0.0.1:8000/v1")._key == "EMPTY"


def test_openai_base_url_names_the_host_and_is_shown(server, monkeypatch, capfd):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proxy")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url.upper().replace("HTTP:", "http:"))
    be = get_backend("openai:gpt-4o")
    assert be.host == f"127.0.0.1:{server.port}" and be._key == "sk-proxy"
    _ask(be)
    assert server.seen[-1][1]["authorization"] == "Bearer sk-proxy"
    assert f"sending to 127.0.0.1:{server.port} (from $OPENAI_BASE_URL)" in capfd.readouterr().err
    monkeypatch.setenv("OPENAI_BASE_URL", "proxy.corp:8443/v1")
    with pytest.raises(ModelSpecError, match=r"OPENAI_BASE_URL: the URL 'proxy\.corp:8443/v1'"):
        get_backend("openai:gpt-4o")


@pytest.mark.parametrize("key", ["sk-\u00e9t\u00e9", "sk-a b", "sk-\u200bzero", "sk-tab\tx"])
def test_a_key_http_cannot_carry_is_refused_at_construction(key, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(TruthlineError) as info:
        get_backend("openai:gpt-4o")
    msg = str(info.value)
    assert "$OPENAI_API_KEY" in msg and "character at position" in msg and key not in msg


def test_a_non_ascii_key_fails_the_run_before_any_call(steel_ws, server, monkeypatch):
    monkeypatch.setenv("BAD_KEY", "sk-\u00fcber")
    spec = f"openai:qwen@{server.url};key_env=BAD_KEY"
    r = runner.invoke(app, ["--workspace", str(steel_ws.root), "prefill", "run", "-m", spec])
    assert r.exit_code == 1 and "non-ASCII character" in str(r.exception)
    r = runner.invoke(app, ["--workspace", str(steel_ws.root), "benchmark", "run", "-m", spec])
    assert r.exit_code == 1 and "non-ASCII character" in str(r.exception)
    assert server.seen == []


# -- the host is shown before the first call -------------------------------------------------


def test_models_check_prints_the_host_before_sending(server):
    r = subprocess.run(
        [*TRUTHLINE, "models", "check", f"openai:qwen@{server.url}", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert f"sending to 127.0.0.1:{server.port}: openai:qwen" in r.stderr
    data = json.loads(r.stdout)  # stdout stays pure JSON
    assert data["host"] == f"127.0.0.1:{server.port}" and data["answer_ok"] is True


def test_prefill_run_prints_the_host_once(steel_ws, server):
    server.answer = "{}"
    spec = f"openai:qwen@{server.url};alias=local"
    args = ["--workspace", str(steel_ws.root), "prefill", "run", "-m", spec, "--limit", "3"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert r.output.count(f"sending to 127.0.0.1:{server.port}: local") == 1
    assert len(server.seen) == 3
    r = runner.invoke(app, [*args, "--json"])  # all answered: nothing sent, nothing shown
    assert r.exit_code == 0 and "sending to" not in r.output and len(server.seen) == 3


def test_benchmark_run_prints_the_host_before_sending(steel_ws, server):
    server.answer = "{}"
    spec = f"openai:qwen@{server.url};alias=local"
    args = ["--workspace", str(steel_ws.root), "benchmark", "run", "-m", spec, "--limit", "2"]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    assert f"sending to 127.0.0.1:{server.port}: local" in r.output  # on stderr
    assert json.loads(r.stdout)["run_id"] and len(server.seen) == 2


def test_nothing_is_printed_when_nothing_is_sent(capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    get_backend("openai:gpt-4o")
    assert "sending to" not in capfd.readouterr().err


# -- options -----------------------------------------------------------------------------------


def test_an_unknown_option_names_the_known_ones():
    msg = _one_line_error("openai:gpt-4o;timout=30")
    assert "unknown option 'timout' for kind openai" in msg
    assert "timeout" in msg and "key_env" in msg and "alias" in msg
    msg = _one_line_error("hf:/models/x;batchsize=2")
    assert "'batchsize'" in msg and "batch" in msg and "device" in msg
    assert "unknown option 'timeout'" in _one_line_error("simulated:steel-v1;timeout=3")


@pytest.mark.parametrize(
    "opt, part",
    [
        ("timeout=-1", "timeout='-1' must be a number > 0"),
        ("timeout=0", "must be a number > 0"),
        ("timeout=nan", "must be a number > 0"),
        ("timeout=inf", "must be a number > 0"),
        ("timeout=1e9", "<= 86400"),
        ("timeout=soon", "must be a number"),
        ("alias=x@v2", "ALIAS@vN names version N"),
        ("alias=a@v10b", "ALIAS@vN"),
        ("alias=", "has an empty value"),
        ("price_in=-0.5", "price_in='-0.5' must be a number >= 0"),
        ("price_out=nan", "must be a number >= 0"),
        ("price_out=-inf", "must be a number >= 0"),
        ("price_date=yesterday", "ISO date"),
        ("image_tokens=1.5", "must be an integer >= 0"),
        ("key_env=MY-KEY", "environment variable name"),
        ("cap_param=max", "max_completion_tokens"),
        ("Timeout=3", "lower-case name"),
        ("timeout", "is not KEY=VALUE"),
        ("timeout=1;timeout=2", "given twice"),
    ],
)
def test_bad_option_values_are_one_line(opt, part):
    assert part in _one_line_error(f"openai:gpt-4o;{opt}")


def test_local_backend_option_values_are_checked():
    assert "conf='2'" in _one_line_error("yolo:yolo11n.pt;conf=2")
    assert "integer >= 1" in _one_line_error("hf:/m;batch=0")
    assert "must be a number >= 0 and <= 1" in _one_line_error("simulated:mapper;error=1.5")


def test_good_options_still_parse():
    s = parse_model_spec(
        "openai:gpt-4o;key_env=AZURE_KEY;alias=gpt4o-azure;timeout=30;price_in=2.5;"
        "price_out=10;price_date=2026-10-01;group=large;replicate=1;image_tokens=85"
    )
    assert s.alias == "gpt4o-azure" and s.opt_float("timeout") == 30.0
    assert parse_model_spec("simulated:steel-v1;alias=simulated:steel-v1@rerun").alias.endswith(
        "@rerun"
    )


def test_an_option_of_an_unregistered_kind_is_left_to_the_kind_error():
    spec = parse_model_spec("nosuchkind:x;whatever=1")
    with pytest.raises(TruthlineError, match="unknown kind 'nosuchkind'"):
        get_backend(spec)


def test_a_plugin_backend_declares_its_options():
    from truthline.models import Backend, backend

    @backend("optdemo")
    class OptDemo(Backend):
        spec_options = ("depth",)

    assert parse_model_spec("optdemo:x;depth=3").opt("depth") == "3"
    assert "known: alias" in _one_line_error("optdemo:x;width=3")


# -- rejected keys and reported usage ------------------------------------------------------------


@pytest.mark.parametrize("code", [401, 403])
def test_a_rejected_key_is_an_auth_error(server, code):
    server.status = code
    with pytest.raises(AuthError) as info:
        _ask(get_backend(f"openai:qwen@{server.url}"))
    err = info.value
    assert isinstance(err, InfraError) and err.retry is False and err.status == code
    assert err.reason == f"http_{code}"


def test_negative_usage_from_a_server_costs_nothing():
    from types import SimpleNamespace as NS

    resp = NS(
        choices=[NS(message=NS(content="{}", refusal=None), finish_reason="stop")],
        usage=NS(
            prompt_tokens=-1_000_000,
            completion_tokens=-5,
            completion_tokens_details=NS(reasoning_tokens=-7),
        ),
    )
    comp = completion_from(resp)
    assert (comp.tokens_in, comp.tokens_out, comp.tokens_thinking) == (0, 0, 0)


def test_a_json_body_reads_as_the_sdk_object_does():
    from types import SimpleNamespace as NS

    body = {
        "choices": [
            {"message": {"content": '{"a": 1}', "refusal": None}, "finish_reason": "length"}
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 9,
            "completion_tokens_details": {"reasoning_tokens": 4},
        },
    }
    obj = NS(
        choices=[NS(message=NS(content='{"a": 1}', refusal=None), finish_reason="length")],
        usage=NS(
            prompt_tokens=12, completion_tokens=9, completion_tokens_details=NS(reasoning_tokens=4)
        ),
    )
    comp = completion_from(body)
    assert comp == completion_from(obj)
    assert (comp.text, comp.finish_reason, comp.tokens_in, comp.tokens_out) == (
        '{"a": 1}',
        "length",
        12,
        5,
    )
    assert comp.tokens_thinking == 4
    refused = completion_from({"choices": [{"message": {"content": None, "refusal": "no"}}]})
    assert (refused.text, refused.refusal, refused.raw, refused.tokens_in) == (None, "no", "no", 0)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": "x"},
        {"choices": [{"finish_reason": "stop"}]},
        {"choices": [{"message": "hello"}]},
        {"choices": [{"message": {"content": 5}}]},
    ],
)
def test_a_malformed_body_is_bad_response(body):
    with pytest.raises(InfraError) as info:
        completion_from(body)
    assert info.value.reason == "bad_response"
