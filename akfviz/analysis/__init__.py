"""akfviz.analysis"""
