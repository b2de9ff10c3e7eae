// placeholder until the polyglot guests land
