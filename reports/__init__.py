"""The paper report: every evaluation figure of Parrot regenerated from experiment files."""
