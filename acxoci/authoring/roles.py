"""The role ids `acx init --role` accepts: the roles the ACX reference knows (its role → class
table), each with the class name hosts show, its capability domain and its default task type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Role:
    """One agent role: id, display class, capability domain and the task type it starts with."""

    id: str
    label: str
    domain: str
    task: str


ROLES: dict[str, Role] = {
    r.id: r
    for r in (
        Role("architect", "Systems Architect", "architecture", "design-api"),
        Role("backend_dev", "Backend Engineer", "backend", "implement-feature"),
        Role("business_analyst", "Analyst", "product", "analyze-requirements"),
        Role("content_creator", "Content Smith", "product", "write-content"),
        Role("cto", "Chief Architect", "architecture", "design-architecture"),
        Role("designer", "Design Smith", "frontend", "design-experience"),
        Role("devops_engineer", "Pipeline Wright", "infrastructure", "deploy"),
        Role("frontend_dev", "Interface Artisan", "frontend", "implement-feature"),
        Role("fullstack_dev", "Full-Stack Generalist", "backend", "implement-feature"),
        Role("hr_manager", "People Lead", "leadership", "coordinate-team"),
        Role("lead_developer", "Lead Engineer", "architecture", "review"),
        Role("marketing_strategist", "Growth Strategist", "product", "plan-campaign"),
        Role("mentor", "Mentor", "leadership", "mentor"),
        Role("product_expert", "Product Sage", "product", "define-product"),
        Role("product_owner", "Product Strategist", "product", "prioritize-backlog"),
        Role("qa_engineer", "Quality Sentinel", "testing", "test-authoring"),
        Role("security_expert", "Security Sentinel", "infrastructure", "harden-security"),
        Role("tech_writer", "Loremaster", "product", "write-docs"),
        Role("tenx_engineer", "Prime Engineer", "backend", "implement-feature"),
        Role("ux_researcher", "UX Researcher", "frontend", "research"),
    )
}
DEFAULT_ROLE = "backend_dev"


def role_label(role: str) -> str:
    """The class a host shows for `role` ("Engineer" for a role outside the table, as the reference)."""
    known = ROLES.get(role)
    return known.label if known else "Engineer"
