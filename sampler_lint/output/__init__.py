"""How results leave a run: the terminal and CI formats (``reporters``, ``formats``), the
baseline, noqa insertion (``add_noqa``), the progress line and the rule documentation (``docs``).
Reads findings and rule classes; never imports a rule module.
"""
