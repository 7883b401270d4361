"""The child environment's secret filter: the same decisions, without loading detect-secrets for
an ordinary environment; the screens that let it skip a plugin never skip a real match."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memagent.childenv import filtered_environment, is_secret_variable
from memagent.redact import contains_secret, redact
from memagent.redact.keys import PLUGINS, _plugin

SCREENED = [plugin for plugin in PLUGINS if plugin.screen]

DISCORD = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"
TELEGRAM = "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX"
TWILIO_SID = "AC" + "0123456789abcdef0123456789abcdef"
TWILIO_KEY = "SK" + "fedcba9876543210fedcba9876543210"
MAILCHIMP = "0123456789abcdef0123456789abcdef-us12"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# innocently named variables whose values are keys: the value decides
SECRET_VALUES = {
    "BUILD_INFO": GITHUB,
    "BOT_ID": DISCORD,
    "CHAT_BRIDGE": TELEGRAM,
    "ACCOUNT": TWILIO_SID,
    "SMS_CONFIG": f"sid={TWILIO_SID} {TWILIO_KEY}",
    "NEWSLETTER": MAILCHIMP,
    "SESSION_BLOB": JWT,
    "UPSTREAM": "https://deploy:s3cr3t-pass@git.example.com/repo.git",
    "HOOK": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "CLOUD": "AKIAIOSFODNN7EXAMPLE",
}
# secret-looking names (and values full of the hints' characters) that are not secrets
HARMLESS = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/app.d/bin",
    "LS_COLORS": "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:*.tar=01;31:" * 8,
    "KEYBOARD_LAYOUT": "us",
    "PWD": "/home/user/projects/packages/accounting",
    "OLDPWD": "/home/user/skills/ack",
    "PASSENGER_APP_ENV": "production",  # *PASS* by name: filtered all the same (name rule kept)
    "REGION": "us-east-1",
    "VERSION_STRING": "1.2.3.4-rc.5+build.6",
    "PYTHONPATH": "src:tests:lib/python3.11/site-packages",
    "SERVER": "localhost:8080",
    "BACK_CALL_ID": "12345678:short",
    "TERM": "xterm-256color",
}


@pytest.mark.parametrize("name", list(SECRET_VALUES))
def test_an_innocent_name_with_a_secret_value_is_held_back(name):
    value = SECRET_VALUES[name]
    assert is_secret_variable(name, value)
    assert name not in filtered_environment({name: value})


@pytest.mark.parametrize("name", list(HARMLESS))
def test_harmless_values_pass_and_names_still_decide(name):
    value = HARMLESS[name]
    named_secret = name.startswith("PASS")
    assert is_secret_variable(name, value) is named_secret
    assert (name in filtered_environment({name: value})) is not named_secret


def test_an_ordinary_environment_is_filtered_without_loading_detect_secrets():
    code = (
        "import sys, json\n"
        "from memagent.childenv import filtered_environment\n"
        "env = json.loads(sys.argv[1])\n"
        "kept = filtered_environment(env)\n"
        "assert 'detect_secrets' not in sys.modules, 'detect-secrets loaded for an ordinary environment'\n"
        "print(sorted(kept))\n"
    )
    import json

    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(HARMLESS)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "PATH" in result.stdout and "PASSENGER_APP_ENV" not in result.stdout


@pytest.mark.parametrize("value", [DISCORD, TELEGRAM, TWILIO_SID, TWILIO_KEY, MAILCHIMP])
def test_keys_behind_a_screen_are_still_redacted_on_disk(value):
    line = f"config: {value} (from the deploy notes)"
    assert contains_secret(line)
    assert value not in redact(line) and "[REDACTED:" in redact(line)


@pytest.mark.parametrize("plugin", SCREENED, ids=[p.path for p in SCREENED])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_a_screened_plugin_passes_its_screen(plugin, data):
    """Strings drawn from the plugin's own patterns, inside arbitrary text: whenever the plugin
    finds something, the screen lets the plugin run."""
    for regex in _plugin(plugin.path).denylist:
        match = data.draw(st.from_regex(regex, fullmatch=True))
        text = data.draw(st.text(max_size=8)) + match + data.draw(st.text(max_size=8))
        if regex.search(text):
            assert re.search(plugin.screen, text), (plugin.path, text)
