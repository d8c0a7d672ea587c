"""akfviz.selection"""
