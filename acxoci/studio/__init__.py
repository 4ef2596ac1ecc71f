"""The ACX Studio (`acx builder`) and the pieces the static catalog (`acx exchange site`) shares
with it: HTML escaping, the graph picture of a workflow or Agent Graph, and the packaged assets."""
