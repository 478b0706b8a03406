"""Playwright browser session and the browser tool suite."""
