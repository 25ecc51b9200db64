"""diagnose_run's pure core: metric rules, log signatures, ranking (see engine.py).

Tables: advisor/data/diagnosis_rules.yaml, diagnosis_signatures.yaml, diagnosis_taxonomy.yaml.
"""

from advisor.diagnosis.engine import DiagnosisSession, diagnose_points, diagnose_text
from advisor.diagnosis.model import Check, Diagnosis, Evidence, Finding, Fix, LogLine
from advisor.diagnosis.tables import category_aliases, taxonomy

__all__ = ["Check", "Diagnosis", "DiagnosisSession", "Evidence", "Finding", "Fix", "LogLine",
           "category_aliases", "diagnose_points", "diagnose_text", "taxonomy"]
