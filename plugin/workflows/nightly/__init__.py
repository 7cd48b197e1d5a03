"""The nightly loop's commands: estimate, compare, plan, select, and the drift history across nights."""
