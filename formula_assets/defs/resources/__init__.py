"""External systems as configurable resources, one module each (so an asset's code version
holds only the resources it uses)."""
