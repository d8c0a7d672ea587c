"""Helpers shared by AppTest files: walk the element tree to a keyed container."""


def block(app, key):
    """The container with ``key`` (its Streamlit id ends with the key), or None."""
    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and getattr(proto, "id", "").endswith("-" + key):
            return node
        for child in (node.children.values() if isinstance(getattr(node, "children", None), dict) else ()):
            found = walk(child)
            if found is not None:
                return found
        return None
    return walk(app.main)
