"""akfviz.dse"""
