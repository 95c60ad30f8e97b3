"""Sign-in beyond passwords: the tenant's external OpenID Connect providers (add, edit, enable,
disable, delete), the PID issuers its wallet sign-in trusts (add, remove) and the staff
credentials it issued (revoke), through the same service functions as ``switchboard
federation``, ``switchboard wallet issuer`` and ``switchboard wallet credential``. A client
secret is never shown: only whether it is read from a file or an environment variable."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, Operator, OperatorDep, notice_of, render
from switchboard.identity.federation import repository as providers
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.models import FIRST_LOGIN, ExternalProvider
from switchboard.identity.issuance import status as credentials
from switchboard.identity.models import ROLES
from switchboard.identity.wallet import repository as issuers
from switchboard.identity.wallet import service as wallet
from switchboard.kit.errors import BadRequest
from switchboard.runtime import RuntimeDep, Session

router = APIRouter()

PAGE = "/admin/sign-in"
SECRET_KINDS = ("env", "file")


def secret_shown(row: ExternalProvider) -> str:
    """What the page says of a provider's client secret: never where it is, only how."""
    if row.secret_source is None:
        return "none (public client)"
    kind = row.secret_source.partition(":")[0]
    return f"set from {'an environment variable' if kind == 'env' else 'a file'}"


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _secret(form: FormData, current: str | None) -> str | None:
    kind, where = _text(form, "secret") or "keep", _text(form, "secret_where")
    if kind == "keep":
        return current
    if kind == "none":
        return None
    if kind not in SECRET_KINDS:
        raise BadRequest("secret: keep, none, env or file")
    if not where:
        raise BadRequest("secret: give the environment variable's name or the file's path")
    return f"{kind}:{where}"


def _spec(form: FormData, *, name: str, current: str | None) -> federation.ProviderSpec:
    domains = _text(form, "allowed_domains").replace(",", " ").lower().split()
    return federation.ProviderSpec(
        name=name, issuer=_text(form, "issuer"), client_id=_text(form, "client_id"),
        secret_source=_secret(form, current), display_name=_text(form, "display_name"),
        scopes=_text(form, "scopes") or federation.DEFAULT_SCOPES,
        username_claim=_text(form, "username_claim") or "preferred_username",
        role_claim=_text(form, "role_claim") or None,
        default_role=_text(form, "default_role") or "user", allowed_domains=tuple(domains),
        first_login=_text(form, "first_login") or "refuse",
    )  # fmt: skip


def _choices() -> dict[str, Any]:
    return {"roles": ROLES, "policies": FIRST_LOGIN, "secret_shown": secret_shown}


@router.get("/sign-in")
async def sign_in_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    tenant_id = operator.tenant.id
    return render(
        request, "signin.html", operator, notice=notice_of(request),
        providers=await providers.list_providers(session, tenant_id=tenant_id),
        issuers=await issuers.list_issuers(session, tenant_id=tenant_id),
        credentials=await credentials.credentials(session, tenant=operator.tenant), **_choices(),
    )  # fmt: skip


@router.post("/sign-in/providers")
async def add_provider(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    spec = _spec(form, name=_text(form, "name"), current=None)
    await federation.add_provider(
        session, tenant=operator.tenant, spec=spec, now=runtime.clock.now()
    )
    return RedirectResponse(f"{PAGE}?notice=created", status_code=303)


async def _provider_page(
    request: Request, operator: Operator, session: Session, name: str
) -> Response:
    row = await federation.require_provider(session, tenant=operator.tenant, name=name)
    return render(request, "signin_provider.html", operator, item=row, **_choices())


@router.get("/sign-in/providers/{name}")
async def provider_page(
    request: Request, name: str, operator: OperatorDep, session: Session
) -> Response:
    return await _provider_page(request, operator, session, name)


@router.post("/sign-in/providers/{name}")
async def edit_provider(
    request: Request, name: str, operator: FormOperator, session: Session
) -> Response:
    row = await federation.require_provider(session, tenant=operator.tenant, name=name)
    spec = _spec(await request.form(), name=row.name, current=row.secret_source)
    await federation.update_provider(session, tenant=operator.tenant, spec=spec)
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
