"""The web service: search and the annotation audit as a JSON API and pages, over what the
pipeline last published in the data lake (`formula-assets serve`)."""
