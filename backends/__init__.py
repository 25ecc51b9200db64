"""Backends that launch a rendered Plan (local, Ray, Kubernetes) and read the run back."""
