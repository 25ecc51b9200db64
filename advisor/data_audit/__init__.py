"""audit_data's pure core: check a data set against the framework and method that will read it.

``AuditSession`` (session.py) streams rows through the format checks (data_formats.yaml: the fields
each pinned framework's loader reads) and the content checks (data_audit_rules.yaml: lengths against
the Plan, length bias, identical/empty/truncated answers, exact and MinHash near duplicates, eval
n-gram contamination, KTO label balance, reward coverage per data_source), then ranks findings.
The reader, the tokenizer and the framework loaders live in rl_advisor/audit_tool.py.
"""

from advisor.data_audit.model import AuditFinding, CheckRow, DataAudit, LengthStats, RowEvidence, RowExample
from advisor.data_audit.session import AuditContext, AuditSession
from advisor.data_audit.tables import family_of
from advisor.data_audit.tokens import EstimateCounter, TokenCounter

__all__ = ["AuditContext", "AuditFinding", "AuditSession", "CheckRow", "DataAudit", "EstimateCounter",
           "LengthStats", "RowEvidence", "RowExample", "TokenCounter", "family_of"]
