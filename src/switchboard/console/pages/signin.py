"""Sign-in beyond passwords: the tenant's external OpenID Connect providers (add, edit, enable,
disable, delete), the PID issuers its wallet sign-in trusts (add, remove) and the staff
credentials it issued (revoke), through the same service functions as ``switchboard
federation``, ``switchboard wallet issuer`` and ``switchboard wallet credential``. A client
secret is entered here as its value, stored sealed and never shown again; naming a variable or
a file the server reads it from is the operator's alone (decision 0024)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from switchboard.auth.models import ROLES
from switchboard.console.deps import FormOperator, Operator, OperatorDep, notice_of, render
from switchboard.identity.federation import repository as providers
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.models import FIRST_LOGIN, ExternalProvider
from switchboard.identity.federation.secrets import (
    KEEP,
    ClientSecret,
    ClientSecrets,
    Keep,
    SecretValue,
)
from switchboard.identity.issuance import status as credentials
from switchboard.identity.wallet import repository as issuers
from switchboard.identity.wallet import service as wallet
from switchboard.kit.errors import BadRequest
from switchboard.runtime import Runtime, RuntimeDep, Session

router = APIRouter()

PAGE = "/admin/sign-in"
SECRET_CHOICES = ("keep", "none", "value")


def secret_shown(row: ExternalProvider, client_secrets: ClientSecrets) -> str:
    """What the page says of a provider's client secret: never the secret or where it is."""
    kind = federation.secret_kind(row)
    if kind == "none":
        return "none (public client)"
    shown = "set (stored sealed)" if kind == "sealed" else "set by the operator"
    if federation.secret_problem(row, client_secrets) is not None:
        return f"{shown}, but refused: sign-ins fail until it is entered again"
    return shown


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _secret(form: FormData, *, editing: bool) -> ClientSecret | Keep:
    choice = _text(form, "secret") or ("keep" if editing else "value")
    if choice not in SECRET_CHOICES or (choice == "keep" and not editing):
        raise BadRequest("secret: enter the client secret, or choose none (or keep when editing)")
    if choice == "keep":
        return KEEP
    if choice == "none":
        return None
    return SecretValue(_text(form, "secret_value"))


def _spec(form: FormData, *, name: str, editing: bool) -> federation.ProviderSpec:
    domains = _text(form, "allowed_domains").replace(",", " ").lower().split()
    return federation.ProviderSpec(
        name=name, issuer=_text(form, "issuer"), client_id=_text(form, "client_id"),
        secret=_secret(form, editing=editing), display_name=_text(form, "display_name"),
        scopes=_text(form, "scopes") or federation.DEFAULT_SCOPES,
        username_claim=_text(form, "username_claim") or "preferred_username",
        role_claim=_text(form, "role_claim") or None,
        default_role=_text(form, "default_role") or "user", allowed_domains=tuple(domains),
        first_login=_text(form, "first_login") or "refuse",
    )  # fmt: skip


def _choices(runtime: Runtime) -> dict[str, Any]:
    client_secrets = ClientSecrets.of(runtime)

    def shown(row: ExternalProvider) -> str:
        return secret_shown(row, client_secrets)

    return {"roles": ROLES, "policies": FIRST_LOGIN, "secret_shown": shown}


@router.get("/sign-in")
async def sign_in_page(
    request: Request, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    tenant_id = operator.tenant.id
    return render(
        request, "signin.html", operator, notice=notice_of(request),
        providers=await providers.list_providers(session, tenant_id=tenant_id),
        issuers=await issuers.list_issuers(session, tenant_id=tenant_id),
        credentials=await credentials.credentials(session, tenant=operator.tenant),
        **_choices(runtime),
    )  # fmt: skip


@router.post("/sign-in/providers")
async def add_provider(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    spec = _spec(form, name=_text(form, "name"), editing=False)
    await federation.add_provider(
        session, tenant=operator.tenant, spec=spec, client_secrets=ClientSecrets.of(runtime),
        now=runtime.clock.now(),
    )  # fmt: skip
    return RedirectResponse(f"{PAGE}?notice=created", status_code=303)


async def _provider_page(
    request: Request, operator: Operator, session: Session, runtime: Runtime, name: str
) -> Response:
    row = await federation.require_provider(session, tenant=operator.tenant, name=name)
    return render(request, "signin_provider.html", operator, item=row, **_choices(runtime))


@router.get("/sign-in/providers/{name}")
async def provider_page(
    request: Request, name: str, operator: OperatorDep, session: Session, runtime: RuntimeDep
) -> Response:
    return await _provider_page(request, operator, session, runtime, name)


@router.post("/sign-in/providers/{name}")
async def edit_provider(
    request: Request, name: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    row = await federation.require_provider(session, tenant=operator.tenant, name=name)
    spec = _spec(await request.form(), name=row.name, editing=True)
    await federation.update_provider(
        session, tenant=operator.tenant, spec=spec, client_secrets=ClientSecrets.of(runtime)
    )
    return RedirectResponse(f"{PAGE}?notice=saved", status_code=303)


@router.post("/sign-in/providers/{name}/enable")
async def enable_provider(name: str, operator: FormOperator, session: Session) -> Response:
    await federation.set_enabled(session, tenant=operator.tenant, name=name, enabled=True)
    return RedirectResponse(f"{PAGE}?notice=saved", status_code=303)


@router.post("/sign-in/providers/{name}/disable")
async def disable_provider(name: str, operator: FormOperator, session: Session) -> Response:
    await federation.set_enabled(session, tenant=operator.tenant, name=name, enabled=False)
    return RedirectResponse(f"{PAGE}?notice=saved", status_code=303)


@router.post("/sign-in/providers/{name}/delete")
async def delete_provider(name: str, operator: FormOperator, session: Session) -> Response:
    await federation.remove_provider(session, tenant=operator.tenant, name=name)
    return RedirectResponse(f"{PAGE}?notice=deleted", status_code=303)


@router.post("/sign-in/issuers")
async def add_issuer(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    await wallet.add_issuer(
        session, tenant=operator.tenant, name=_text(form, "name"), jwk=_text(form, "jwk"),
        username_claim=_text(form, "username_claim"), now=runtime.clock.now(),
    )  # fmt: skip
    return RedirectResponse(f"{PAGE}?notice=created", status_code=303)


@router.post("/sign-in/issuers/{name}/delete")
async def remove_issuer(name: str, operator: FormOperator, session: Session) -> Response:
    await wallet.remove_issuer(session, tenant=operator.tenant, name=name)
    return RedirectResponse(f"{PAGE}?notice=deleted", status_code=303)


@router.post("/sign-in/credentials/{credential_id}/revoke")
async def revoke_credential(
    credential_id: int, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    await credentials.revoke(
        session, tenant=operator.tenant, credential_id=credential_id, now=runtime.clock.now()
    )
    return RedirectResponse(f"{PAGE}?notice=revoked", status_code=303)
