"""akfviz.viz"""
