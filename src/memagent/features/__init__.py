"""Capabilities as plug-ins: each module here is one :class:`~memagent.agent.feature.Feature`.

A feature receives its collaborators explicitly at construction (a store, a manager, a
callable) and brings its own tools, prompt text, per-turn context and lifecycle reactions. The
runtime composes them in a fixed order; nothing else knows what a feature does.
"""
