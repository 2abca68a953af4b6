"""The chat app: sessions, runs and their audit trail, the pages, the live trace."""
