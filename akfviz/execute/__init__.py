"""akfviz.execute"""
