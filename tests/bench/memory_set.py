"""A labelled recall set: one team's memories, and questions with the memories that should come
back (every other memory should not). Written before measuring, with near misses on purpose:
memories that share a word or two with a question but do not answer it.

Precision is the share of recalled memories that are labelled relevant (the seed's target is
more than 85%); recall, the share of relevant memories that came back.
"""

from __future__ import annotations

MEMORIES: dict[str, tuple[str, str]] = {
    # key: (kind, text)
    "staging_db": ("semantic", "Our staging database is db-2 in Frankfurt."),
    "prod_db": ("semantic", "The production database is a PostgreSQL 16 cluster named pg-main."),
    "db_backup": ("semantic", "Database backups run nightly at 02:00 and are kept for 30 days."),
    "deploy_day": ("semantic", "Deploys to production happen on Tuesdays and Thursdays after the standup."),
    "deploy_freeze": ("semantic", "There is a deploy freeze from December 20 until January 3."),
    "rollback": (
        "episodic",
        "Asked: how do we roll back a bad deploy? Answered: run scripts/rollback.sh with the release tag.",
    ),
    "standup": ("semantic", "The daily standup is at 9:30 in the room called Ada."),
    "standup_notes": ("semantic", "Standup notes are written in the team wiki, not in chat."),
    "oncall": ("semantic", "The on-call rotation changes every Monday at 9:00."),
    "oncall_phone": ("semantic", "The on-call phone number is forwarded through PagerDuty."),
    "vpn": ("semantic", "The VPN gateway is vpn-3.example.net and tokens rotate every ninety days."),
    "wifi": ("semantic", "The guest wifi password is changed on the first day of each month."),
    "lunch": ("episodic", "Asked: where should the team lunch be? Answered: the noodle bar on Elm Street."),
    "offsite": ("semantic", "The team offsite is planned for the second week of June in Lisbon."),
    "budget": ("semantic", "The cloud budget for the quarter is 42,000 euros."),
    "cloud_costs": (
        "episodic",
        "Asked: why did cloud costs jump in March? Answered: an unused GPU cluster was left running.",
    ),
    "invoice": ("semantic", "Supplier invoices go to accounts@example.com with the purchase order number."),
    "expense": ("semantic", "Expense reports are due by the fifth working day of the month."),
    "python_version": ("semantic", "The backend runs on Python 3.12; 3.11 is no longer supported."),
    "node_version": ("semantic", "The frontend build uses Node 20."),
    "ci": (
        "episodic",
        "Asked: why is CI slow? Answered: the integration tests start PostgreSQL for every job.",
    ),
    "code_review": ("semantic", "Every pull request needs one approving code review before merge."),
    "release_notes": ("semantic", "Release notes are drafted by the person who cuts the release."),
    "customer_acme": ("semantic", "Acme Corp's contract renews in September; their contact is Dana Lee."),
    "customer_globex": ("semantic", "Globex asked for a data export in CSV every Friday."),
    "sla": ("semantic", "Our support SLA is a first reply within four business hours."),
    "holiday": ("semantic", "Alice is on holiday from August 4 to August 18."),
    "security_training": ("semantic", "Security training must be completed by every employee each year."),
    "password_policy": ("semantic", "Passwords for internal tools need at least 14 characters."),
    "printer": (
        "episodic",
        "Asked: the third floor printer is jammed, who fixes it? Answered: facilities, ticket queue FAC.",
    ),
    "parking": ("semantic", "Parking spots in the garage are booked through the facilities portal."),
    "metrics": ("semantic", "Service metrics are in Grafana under the dashboard called Core SLOs."),
    "logs": ("semantic", "Application logs are kept in Loki for fourteen days."),
    "feature_flags": (
        "semantic",
        "Feature flags are managed in Unleash; stale flags are removed each quarter.",
    ),
    "hiring": (
        "episodic",
        "Asked: how many backend engineers are we hiring? Answered: two, starting in October.",
    ),
    "onboarding": ("semantic", "New engineers get a laptop and an onboarding buddy on their first day."),
}

# question: the memories that should come back (empty: nothing should).
QUESTIONS: dict[str, set[str]] = {
    "Which staging database do we use?": {"staging_db"},
    "What is the production database called?": {"prod_db"},
    "When do database backups run?": {"db_backup"},
    "Which days do we deploy to production?": {"deploy_day"},
    "Is there a deploy freeze over the holidays?": {"deploy_freeze"},
    "How do I roll back a bad deploy?": {"rollback"},
    "What time is the daily standup?": {"standup"},
    "Where do standup notes go?": {"standup_notes"},
    "When does the on-call rotation change?": {"oncall"},
    "What is the VPN gateway address?": {"vpn"},
    "Where is the team offsite this year?": {"offsite"},
    "What is our cloud budget for the quarter?": {"budget"},
    "Why did the cloud costs jump in March?": {"cloud_costs"},
    "Where do supplier invoices go?": {"invoice"},
    "When are expense reports due?": {"expense"},
    "Which Python version does the backend run?": {"python_version"},
    "Why is CI so slow?": {"ci"},
    "When does the Acme contract renew?": {"customer_acme"},
    "What does Globex want every Friday?": {"customer_globex"},
    "What is our support SLA for a first reply?": {"sla"},
    "When is Alice on holiday?": {"holiday"},
    "How long must passwords for internal tools be?": {"password_policy"},
    "Who fixes the jammed printer?": {"printer"},
    "Where are the service metrics dashboards?": {"metrics"},
    "How long are application logs kept?": {"logs"},
    "How many backend engineers are we hiring?": {"hiring"},
    # Questions no memory answers: anything recalled is a false positive.
    "What is the capital of Australia?": set(),
    "Write a haiku about autumn leaves.": set(),
    "How do I center a div in CSS?": set(),
    "What is 17*23?": set(),
}

# --- the held-out split ---------------------------------------------------------------------
# Written before the ranking was tuned (on the set above, the tuning split) and never used to
# tune it: its figures are the ones that say how recall does on memories it was not fitted to.
# Other subjects, other wording, near misses of its own.

HELDOUT_MEMORIES: dict[str, tuple[str, str]] = {
    "design_review": ("semantic", "Design reviews happen on Wednesday afternoons in the Turing room."),
    "api_rate_limit": ("semantic", "The public API rate limit is 600 requests per minute per key."),
    "api_keys": (
        "semantic",
        "API keys for partners are issued by the platform team through the admin console.",
    ),
    "search_index": (
        "episodic",
        "Asked: why are search results stale? Answered: the search index rebuild job failed on Sunday.",
    ),
    "cert_renewal": (
        "semantic",
        "TLS certificates are renewed automatically by cert-manager thirty days before expiry.",
    ),
    "dns": (
        "semantic",
        "Our DNS is hosted at Route 53; changes go through a pull request to the infra repo.",
    ),
    "mobile_release": ("semantic", "The mobile app is released to the stores every second Thursday."),
    "app_store_review": (
        "episodic",
        "Asked: how long does app store review take? Answered: usually one to two days.",
    ),
    "sales_target": ("semantic", "The sales target for this year is 3.2 million euros in new contracts."),
    "board_meeting": ("semantic", "The board meeting is held in the first week of every quarter."),
    "laptop_refresh": ("semantic", "Laptops are replaced every three years through the IT helpdesk."),
    "office_hours": ("semantic", "The office is open from 7:00 to 20:00 on weekdays."),
    "kitchen": ("semantic", "The kitchen on the second floor is cleaned every Friday afternoon."),
    "translation": (
        "semantic",
        "Product texts are translated into German and French by an agency called Lingua.",
    ),
    "analytics_tool": ("semantic", "Product analytics run on Mixpanel; the tracking plan lives in the wiki."),
    "data_retention": ("semantic", "Customer data is deleted ninety days after a contract ends."),
    "incident_review": (
        "episodic",
        "Asked: when do we write an incident review? Answered: within five days after any outage "
        "that paged someone.",
    ),
    "queue_backlog": (
        "episodic",
        "Asked: why did the email queue back up? Answered: the SMTP provider throttled us after a bulk send.",
    ),
    "mentor": ("semantic", "Priya mentors the new frontend engineers."),
    "conference": ("semantic", "The team goes to PyCon Europe each year with a budget of two tickets."),
    "staging_reset": ("semantic", "The staging environment is reset with fresh data every Sunday night."),
    "db_migration": (
        "episodic",
        "Asked: how do we run a database migration safely? Answered: deploy the migration first, "
        "then the code that uses it.",
    ),
    "prod_access": ("semantic", "Production shell access needs approval from the engineering manager."),
    "secrets": ("semantic", "Application secrets are kept in Vault under the path kv/apps."),
}

HELDOUT_QUESTIONS: dict[str, set[str]] = {
    "When do design reviews happen?": {"design_review"},
    "What is the rate limit of the public API?": {"api_rate_limit"},
    "Who issues API keys to partners?": {"api_keys"},
    "Why were the search results stale?": {"search_index"},
    "How are TLS certificates renewed?": {"cert_renewal"},
    "Where is our DNS hosted?": {"dns"},
    "How often is the mobile app released?": {"mobile_release"},
    "What is this year's sales target?": {"sales_target"},
    "When is the board meeting?": {"board_meeting"},
    "How often are laptops replaced?": {"laptop_refresh"},
    "Who translates the product texts?": {"translation"},
    "What do we use for product analytics?": {"analytics_tool"},
    "When is customer data deleted?": {"data_retention"},
    "When do we write an incident review?": {"incident_review"},
    "Why did the email queue back up?": {"queue_backlog"},
    "When is the staging environment reset?": {"staging_reset"},
    "How do we run a database migration safely?": {"db_migration"},
    "Who approves production shell access?": {"prod_access"},
    "Where are application secrets kept?": {"secrets"},
    "Who mentors new frontend engineers?": {"mentor"},
    # Questions no memory answers.
    "What is the boiling point of water in Kelvin?": set(),
    "Translate 'good morning' into Spanish.": set(),
    "Explain how a hash map works.": set(),
    "Who wrote Pride and Prejudice?": set(),
}

# The held-out look-alikes: other words (the held-out questions'), and another sentence shape
# than the tuning split's generated memories (tests/bench/memory.py).
HELDOUT_ASPECTS = [
    "rate limit",
    "api keys",
    "search index",
    "certificate renewal",
    "dns records",
    "release schedule",
    "sales target",
    "design review",
    "data retention",
    "secrets path",
]
