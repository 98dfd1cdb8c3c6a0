from setuptools import setup

setup(cffi_modules=["build_atsd.py:ffibuilder"])
