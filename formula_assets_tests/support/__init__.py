"""Helpers the tests share: local servers, the real command on a throw-away instance, and
small inputs; no tests here."""
