"""The hostile-repository attack set: ``table.ATTACKS``, run by ``test_attacks.py`` and by
``bench/attack_table.py``."""
