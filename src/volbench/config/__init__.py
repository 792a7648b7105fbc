"""The experiment file's field reader and the value types every layer's spec uses."""
