"""delayq inside web frameworks: `delayq.integrations.django` (an app, a management command, enqueue in the
request's transaction or on commit) and `delayq.integrations.flask` (an extension with init_app). Each needs its
framework: pip install 'delayq[django]' or 'delayq[flask]'. docs/DJANGO.md and docs/FLASK.md show them."""
