"""Reverse-mode autodiff: IR rewrites that make kernels reversible (prepare.py); emit/adjoint.py prints."""
