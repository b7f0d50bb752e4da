"""The first release's schema, as its `Base.metadata.create_all` built it.

A database made by that release has these tables and no alembic_version table; the store
stamps it 0001 and upgrades from here, so this revision must stay exactly that schema.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "diagnosis_session",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("world", sa.String(80)),
        sa.Column("shape", sa.String(10), nullable=False),
        sa.Column("provider", sa.String(40), nullable=False),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("stage", sa.String(30), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("verdict", sa.String(12)),
        sa.Column("gatekeeper_status", sa.String(8)),
        sa.Column("failed_rules", sa.JSON(), nullable=False),
        sa.Column("groundedness", sa.Float()),
        sa.Column("services", sa.String(400), nullable=False),
        sa.Column("final_answer", sa.Text()),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("planner_plan", sa.JSON()),
        sa.Column("evidence_digests", sa.JSON()),
        sa.Column("executor_raw_output", sa.Text()),
        sa.Column("verifier_output", sa.JSON()),
        sa.Column("composer_output", sa.JSON()),
        sa.Column("self_evaluation", sa.JSON()),
        sa.Column("gatekeeper_features", sa.JSON()),
        sa.Column("timings_ms", sa.JSON(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("imported_id_map", sa.JSON()),
    )
    op.create_index("ix_diagnosis_session_created_at", "diagnosis_session", ["created_at"])
    op.create_index("ix_diagnosis_session_status", "diagnosis_session", ["status"])
    op.create_index("ix_diagnosis_session_verdict", "diagnosis_session", ["verdict"])
    op.create_index("ix_diagnosis_session_gatekeeper_status", "diagnosis_session", ["gatekeeper_status"])
    op.create_index("ix_session_review_queue", "diagnosis_session", ["verdict", "created_at"])

    op.create_table(
        "tool_invocation",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(40), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("tool_name", sa.String(40), nullable=False),
        sa.Column("model_tool_name", sa.String(40), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("output_preview", sa.Text(), nullable=False),
        sa.Column("output_bytes", sa.Integer(), nullable=False),
        sa.Column("stored_cut_bytes", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("retrieval_details", sa.JSON()),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_tool_invocation_session_id", "tool_invocation", ["session_id"])

    op.create_table(
        "llm_call",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(40), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("stage", sa.String(20), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(40), nullable=False),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("prompt_file", sa.String(200), nullable=False),
        sa.Column("prompt_version", sa.String(40), nullable=False),
        sa.Column("messages", sa.JSON(), nullable=False),
        sa.Column("raw_response", sa.Text(), nullable=False),
        sa.Column("parse_status", sa.String(10), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_llm_call_session_id", "llm_call", ["session_id"])

    op.create_table(
        "review",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(40), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("claim_id", sa.String(80)),
        sa.Column("label", sa.String(40), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("reviewer", sa.String(120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_review_session_id", "review", ["session_id"])

    op.create_table(
        "rule_version",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("author", sa.String(120), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("index_yaml", sa.Text(), nullable=False),
        sa.Column("metadata_yaml", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("parent_id", sa.Integer()),
    )
    op.create_index("ix_rule_version_active", "rule_version", ["active"])


def downgrade() -> None:
    for table in ("rule_version", "review", "llm_call", "tool_invocation", "diagnosis_session"):
        op.drop_table(table)
