"""Where an `anthropic` subject's requests go: the Anthropic API, Amazon Bedrock or Google
Vertex AI (`provider:`), each through the official SDK's own client.

The request body, retries and the observation are the `anthropic` runtime's, whatever the
provider; only the client differs. `AsyncAnthropicBedrock` sends to `/model/<id>/invoke`
and signs each request with SigV4 from the standard AWS credential chain (botocore reads
`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, `AWS_PROFILE`, the shared
files or an instance role), or sends a Bedrock API key as a bearer token. `AsyncAnthropicVertex`
sends to `.../publishers/anthropic/models/<id>:rawPredict` with a Google access token from
Application Default Credentials, or one read from the variable `api_key_env` names.
No credential is passed in options, stored, or written: the SDKs read the environment when
a trial runs.
"""

import importlib.util
import os
from typing import Any, Literal

from ix._lazy import lazy
from ix.domain.errors import ConfigError, TrialError

boto3 = lazy("boto3")

Provider = Literal["anthropic", "bedrock", "vertex"]
#: The package each cloud provider's client needs besides `anthropic`, and its extra.
_SDK = {"bedrock": ("botocore", "bedrock"), "vertex": ("google.auth", "vertex")}
#: Each cloud provider's own options: named under another provider, they are a mistake.
_OWN = {"bedrock": ("aws_region",), "vertex": ("project_id", "region")}


def cloud_defaults(cls: Any, data: Any) -> Any:
    """Before validation: on bedrock and vertex `api_key_env` defaults to null (credentials
    come from the cloud's own chain); set, it names the variable holding a Bedrock API key
    or a Vertex access token."""
    if isinstance(data, dict) and data.get("provider") in _OWN and "api_key_env" not in data:
        return {**data, "api_key_env": None}
    return data


def check_provider(options: Any) -> Any:
    """After validation: each provider's own options only under it, and no `batch` but on
    the Anthropic API."""
    for provider, names in _OWN.items():
        for name in names:
            if getattr(options, name) is not None and options.provider != provider:
                raise ValueError(f"{name} is an option of provider: {provider} (this "
                                 f"subject's provider is {options.provider})")
    if options.provider != "anthropic" and options.batch:
        raise ValueError(f"batch: true uses the Anthropic API's Message Batches, which "
                         f"provider: {options.provider} does not offer through this SDK; "
                         "remove batch, or use provider: anthropic")
    return options


def require_provider(provider: str) -> None:
    """Fail the build (a configuration error) when the provider's package is missing."""
    if provider not in _SDK:
        return
    module, extra = _SDK[provider]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # not even its parent package (`google`)
        found = False
    if not found:
        raise ConfigError(f"provider: {provider} needs the {module} package: "
                          f"pip install 'ix-lab[{extra}]'", field="runtime.provider")


def anthropic_client(sdk: Any, options: Any, key: str) -> Any:
    """The SDK client of `options.provider` (our retries, not the SDK's: `max_retries=0`);
    `key` is the value of `api_key_env` ("unused" when it is null)."""
    common: dict[str, Any] = {"base_url": options.base_url, "max_retries": 0,
                              "timeout": options.request_timeout_s}
    given = options.api_key_env is not None
    try:
        if options.provider == "bedrock":
            if not given and not _aws_credentials(options.aws_region):
                raise TrialError("missing_api_key", "bedrock: no AWS credentials found: set "
                                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
                                 "(or AWS_BEARER_TOKEN_BEDROCK for a Bedrock API key)")
            if given:  # a Bedrock API key (else SigV4; the SDK reads AWS_BEARER_TOKEN_BEDROCK)
                common["api_key"] = key
            return sdk.AsyncAnthropicBedrock(aws_region=options.aws_region, **common)
        if options.provider == "vertex":
            if given:  # an access token (else Application Default Credentials)
                common["access_token"] = key
            for name in ("project_id", "region"):  # else the SDK's environment variables
                if getattr(options, name) is not None:
                    common[name] = getattr(options, name)
            return sdk.AsyncAnthropicVertex(**common)
    except ValueError as exc:  # a region or project the SDK could not find
        raise TrialError("missing_api_key", f"{options.provider}: {exc}") from None
    return sdk.AsyncAnthropic(api_key=key, **common)


def _aws_credentials(region: str | None) -> bool:
    """Whether botocore finds AWS credentials (or a Bedrock API key is in the environment):
    a run without them fails its trials at once, saying what to set, instead of at signing."""
    if os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
        return True
    return boto3.Session(region_name=region).get_credentials() is not None
