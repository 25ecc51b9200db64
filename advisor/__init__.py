"""The pure core of rl-advisor: typed functions from pydantic models to pydantic models.

No I/O, no network, and no heavy import (torch, ray, kubernetes, transformers) at import time.
"""
