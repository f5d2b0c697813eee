"""The `quickjs` posture: a JavaScript file run by QuickJS in a separate, limited worker."""
